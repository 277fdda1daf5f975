// Package trust reads and writes trust records for project-scope servers.
package trust
