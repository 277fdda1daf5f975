// Package config parses strict YAML declarations of MCP servers and the
// user-scope settings. It is the only package that imports gopkg.in/yaml.v3.
package config

import _ "gopkg.in/yaml.v3"
