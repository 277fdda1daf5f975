package gateway

import "testing"

func TestRemedyForEachSurface(t *testing.T) {
	approve := Remedy{Step: StepApprove, After: `, add "fx__fail" to the 'approve:' list in mcp.yaml, or set 'actionClass: read' on server fx in mcp.yaml`}
	for _, tc := range []struct {
		name                     string
		r                        Remedy
		cli, model, script, smod string
	}{
		{"none", Remedy{}, "", "", "", ""},
		{"refresh", Remedy{Step: StepRefresh, Server: "fx", After: "to launch it once and record its tools"},
			"run 'sluice find --server fx --refresh' to launch it once and record its tools",
			`call find with {"server":"fx","refresh":true} to launch it once and record its tools`, "", ""},
		{"refresh with prose around", Remedy{Before: "fix the server or its declaration, then", Step: StepRefresh, Server: "my-srv", After: "(a refresh resets the count)"},
			"fix the server or its declaration, then run 'sluice find --server my-srv --refresh' (a refresh resets the count)",
			`fix the server or its declaration, then call find with {"server":"my-srv","refresh":true} (a refresh resets the count)`, "", ""},
		{"find one server", Remedy{Step: StepFindServer, Server: "fx", After: "to list its tools"},
			"run 'sluice find --server fx' to list its tools", `call find with {"server":"fx"} to list its tools`, "", ""},
		{"find", Remedy{Before: "capabilities are SERVER__TOOL;", Step: StepFind, After: "to list them"},
			"capabilities are SERVER__TOOL; run 'sluice find' to list them", "capabilities are SERVER__TOOL; call find to list them", "", ""},
		{"servers", Remedy{Step: StepServers},
			"run 'sluice servers' to see every declaration and its diagnostics",
			"call find: its servers list shows every declared server, its trust and state", "", ""},
		{"approve", approve,
			`approve this call (--yes in the CLI), add "fx__fail" to the 'approve:' list in mcp.yaml, or set 'actionClass: read' on server fx in mcp.yaml`,
			`the user must approve this call when sluice asks through the client (elicitation), add "fx__fail" to the 'approve:' list in mcp.yaml, or set 'actionClass: read' on server fx in mcp.yaml`,
			`add "fx__fail" to the 'approve:' list in mcp.yaml, or set 'actionClass: read' on server fx in mcp.yaml`,
			`the user must do this outside the agent: add "fx__fail" to the 'approve:' list in mcp.yaml, or set 'actionClass: read' on server fx in mcp.yaml`},
		{"user only", fixUser("run 'sluice trust canary'"),
			"run 'sluice trust canary'", "the user must do this outside the agent: run 'sluice trust canary'", "", ""},
		{"prose", fixText("pass the server id"), "pass the server id", "pass the server id", "", ""},
	} {
		if tc.script == "" {
			tc.script = tc.cli
		}
		if tc.smod == "" {
			tc.smod = tc.model
		}
		for _, c := range []struct {
			s    Surface
			want string
		}{{SurfaceCLI, tc.cli}, {SurfaceModel, tc.model}, {SurfaceScript, tc.script}, {SurfaceScriptModel, tc.smod}} {
			if got := tc.r.For(c.s); got != c.want {
				t.Errorf("%s, surface %d:\n got %q\nwant %q", tc.name, c.s, got, c.want)
			}
		}
	}
	if s := approve.String(); s != approve.For(SurfaceCLI) {
		t.Errorf("String() = %q; want the CLI rendering", s)
	}
}
