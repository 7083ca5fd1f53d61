module ansible-operator/nodeimage

go 1.26.0
