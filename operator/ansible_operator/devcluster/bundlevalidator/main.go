// Command bundle-validator validates OLM bundle directories with the validators that
// `operator-sdk bundle validate` runs, from github.com/operator-framework/api at the version
// go.mod pins: the default ones (the bundle, its ClusterServiceVersion, its CRDs, every other
// object's metadata) and, with -optional, the operatorframework suite
// (`--select-optional suite=operatorframework`). It prints one line per finding,
// "error: ..." or "warning: ...", and exits 1 when there is an error.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/operator-framework/api/pkg/manifests"
	"github.com/operator-framework/api/pkg/validation"
	apierrors "github.com/operator-framework/api/pkg/validation/errors"
	interfaces "github.com/operator-framework/api/pkg/validation/interfaces"
	k8svalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// The operatorframework suite of operator-sdk's optional validators.
var operatorFramework = []interfaces.Validator{
	validation.OperatorHubV2Validator,
	validation.StandardCapabilitiesValidator,
	validation.StandardCategoriesValidator,
	validation.AlphaDeprecatedAPIsValidator,
	validation.GoodPracticesValidator,
}

func main() {
	optional := flag.Bool("optional", false, "also run the operatorframework suite")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: bundle-validator [-optional] BUNDLE_DIR...")
	}
	flag.Parse()
	if flag.NArg() == 0 {
		flag.Usage()
		os.Exit(2)
	}
	failed := false
	for _, dir := range flag.Args() {
		results, err := validate(dir, *optional)
		if err != nil {
			fmt.Printf("error: %s: %v\n", dir, err)
			failed = true
			continue
		}
		for _, result := range results {
			for _, e := range result.Errors {
				fmt.Printf("error: %s: %s: %s\n", dir, result.Name, oneLine(e.Error()))
				failed = true
			}
			for _, w := range result.Warnings {
				fmt.Printf("warning: %s: %s: %s\n", dir, result.Name, oneLine(w.Error()))
			}
		}
	}
	if failed {
		os.Exit(1)
	}
}

func validate(dir string, optional bool) ([]apierrors.ManifestResult, error) {
	bundle, err := manifests.GetBundleFromDir(filepath.Join(dir, "manifests"))
	if err != nil {
		return nil, err
	}
	own := apierrors.ManifestResult{Name: bundle.Name}
	for _, obj := range bundle.Objects {
		kind := obj.GetObjectKind().GroupVersionKind().Kind
		if kind == "ClusterServiceVersion" || kind == "CustomResourceDefinition" {
			continue
		}
		noName := func(string, bool) []string { return nil }
		errs := k8svalidation.ValidateObjectMetaAccessor(obj, false, noName, field.NewPath("metadata"))
		if len(errs) > 0 {
			own.Add(apierrors.ErrFailedValidation(errs.ToAggregate().Error(), obj.GetName()))
		}
	}
	results := validation.BundleValidator.Validate(bundle)
	if bundle.CSV == nil {
		own.Add(apierrors.ErrInvalidBundle("no ClusterServiceVersion in bundle", bundle.Name))
	} else {
		results = append(results, validation.ClusterServiceVersionValidator.Validate(bundle.CSV)...)
	}
	var crds []interface{}
	for _, crd := range bundle.V1CRDs {
		crds = append(crds, crd)
	}
	for _, crd := range bundle.V1beta1CRDs {
		crds = append(crds, crd)
	}
	if len(crds) > 0 {
		results = append(results, validation.CustomResourceDefinitionValidator.Validate(crds...)...)
	}
	results = append(results, own)
	if optional {
		objs := bundle.ObjectsToValidate()
		for _, obj := range bundle.Objects {
			objs = append(objs, obj)
		}
		objs = append(objs, map[string]string{}) // operator-sdk's --optional-values, none given
		for _, v := range operatorFramework {
			results = append(results, v.Validate(objs...)...)
		}
	}
	return results, nil
}

func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}
