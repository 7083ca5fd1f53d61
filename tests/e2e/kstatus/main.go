// kstatus-check: how the GitOps tools read custom resources, by their own code.
//
// It reads JSON objects, one per line, on stdin and writes one JSON line per object: kstatus's
// verdict (sigs.k8s.io/cli-utils/pkg/kstatus/status.Compute, as Flux and cli-utils compute it)
// and, given an Argo CD health check (its Lua script) as the first argument, what that script
// answers, run with gopher-lua the way Argo CD runs resource health checks: the object as the
// global `obj`, the base, table, string and math libraries, and a table with `status` and
// `message` returned.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"

	lua "github.com/yuin/gopher-lua"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
)

type verdict struct {
	Status  string `json:"status"`
	Message string `json:"message"`
}

type answer struct {
	Kstatus verdict  `json:"kstatus"`
	ArgoCD  *verdict `json:"argocd,omitempty"`
}

func main() {
	script := ""
	if len(os.Args) > 1 {
		text, err := os.ReadFile(os.Args[1])
		if err != nil {
			fail(err)
		}
		script = string(text)
	}
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 16<<20)
	out := json.NewEncoder(os.Stdout)
	for in.Scan() {
		// As the API machinery reads objects: whole numbers as int64, which kstatus expects.
		resource := &unstructured.Unstructured{}
		if err := resource.UnmarshalJSON(in.Bytes()); err != nil {
			fail(err)
		}
		obj := resource.Object
		result, err := status.Compute(resource)
		if err != nil {
			fail(err)
		}
		reply := answer{Kstatus: verdict{Status: result.Status.String(), Message: result.Message}}
		if script != "" {
			health, err := argoHealth(script, obj)
			if err != nil {
				fail(err)
			}
			reply.ArgoCD = &health
		}
		if err := out.Encode(reply); err != nil {
			fail(err)
		}
	}
	if err := in.Err(); err != nil {
		fail(err)
	}
}

func argoHealth(script string, obj map[string]interface{}) (verdict, error) {
	l := lua.NewState(lua.Options{SkipOpenLibs: true})
	defer l.Close()
	for _, lib := range []struct {
		name string
		open lua.LGFunction
	}{
		{lua.BaseLibName, lua.OpenBase},
		{lua.TabLibName, lua.OpenTable},
		{lua.StringLibName, lua.OpenString},
		{lua.MathLibName, lua.OpenMath},
	} {
		l.Push(l.NewFunction(lib.open))
		l.Push(lua.LString(lib.name))
		l.Call(1, 0)
	}
	l.SetGlobal("obj", toLua(l, obj))
	if err := l.DoString(script); err != nil {
		return verdict{}, err
	}
	table, ok := l.Get(-1).(*lua.LTable)
	if !ok {
		return verdict{}, fmt.Errorf("the health check returned %s, not a table", l.Get(-1).Type())
	}
	return verdict{
		Status:  lua.LVAsString(table.RawGetString("status")),
		Message: lua.LVAsString(table.RawGetString("message")),
	}, nil
}

// toLua converts decoded JSON as Argo CD's decodeValue does: maps and lists become tables.
func toLua(l *lua.LState, value interface{}) lua.LValue {
	switch v := value.(type) {
	case map[string]interface{}:
		table := l.NewTable()
		for key, item := range v {
			table.RawSetString(key, toLua(l, item))
		}
		return table
	case []interface{}:
		table := l.NewTable()
		for _, item := range v {
			table.Append(toLua(l, item))
		}
		return table
	case string:
		return lua.LString(v)
	case bool:
		return lua.LBool(v)
	case int64:
		return lua.LNumber(v)
	case float64:
		return lua.LNumber(v)
	case nil:
		return lua.LNil
	}
	return lua.LString(fmt.Sprint(value))
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "kstatus-check:", err)
	os.Exit(1)
}
