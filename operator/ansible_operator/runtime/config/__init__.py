"""The settings of ``ansible-operator run`` (``settings``) and the command line that gives them
(``flags``).
"""
