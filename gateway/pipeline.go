package gateway

import (
	"context"
	"encoding/json"
)

// pipeline runs the result filters. Until filters are configured it passes
// results through unchanged.
type pipeline struct{}

func (g *Gateway) initPipeline() error {
	g.pipeline = &pipeline{}
	return nil
}

func (p *pipeline) close() {}

// filterResult runs the result-stage filters on a tool result and, when
// toModel is set, the context-stage filters on what goes back to the model.
func (g *Gateway) filterResult(ctx context.Context, capability string, raw json.RawMessage, toModel bool) (json.RawMessage, error) {
	return raw, nil
}
