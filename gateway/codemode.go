package gateway

// decorate adds code-mode details (module and signature) to a description.
func (g *Gateway) decorate(d *ToolDetail, v ServerView, tools []toolInfo) {}
