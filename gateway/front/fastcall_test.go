package front

import (
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// sdkConverted is a backend's raw tool result as the SDK path answers it
// (decodeToolResult, then the SDK's encoding, with what the SDK adds for a
// modern request): the oracle of passResult.
func sdkConverted(raw []byte, modern bool, serverInfo []byte) ([]byte, string, bool) {
	res, err := decodeToolResult(raw)
	if err != nil {
		return nil, "", false
	}
	outcome := "ok"
	if res.IsError {
		outcome = "tool_error"
	}
	if modern {
		if res.Meta == nil {
			res.Meta = mcp.Meta{}
		}
		res.Meta[mcp.MetaKeyServerInfo] = json.RawMessage(serverInfo)
	}
	out, err := json.Marshal(res)
	if err != nil {
		return nil, "", false
	}
	if modern {
		out = withMember(out, `"resultType":"complete"`)
	}
	return out, outcome, true
}
