// Package catalog caches each declared server's tool catalog on disk.
package catalog
