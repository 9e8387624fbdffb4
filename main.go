// Command convsvc is a self-hosted file conversion service in one binary.
package main

import "github.com/convsvc/convsvc/cli"

func main() { cli.Execute() }
