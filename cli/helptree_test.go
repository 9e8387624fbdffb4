package cli_test

import (
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/convsvc/convsvc/cli"
)

// shortVerbs are the words a group's Short uses for its subcommands' names.
var shortVerbs = map[string]string{"issue": "create", "define": "set", "remove": "rm", "register": "add"}

// TestHelp_NamesOnlyRealSubcommands walks the command tree: every verb a group's Short lists
// ("Create, list, get and update accounts"), every `word` its Long quotes, and every convsvc
// command line in any Long or Example names a command that exists.
func TestHelp_NamesOnlyRealSubcommands(t *testing.T) {
	root := cli.NewRootCommand()
	list := regexp.MustCompile(`^(\w+)((?:, \w+)*),? and (\w+) `)
	quoted := regexp.MustCompile("`(\\w+)`")
	line := regexp.MustCompile("(?m)(?:^\\s*|`)convsvc((?: [a-z][a-z-]*)+)") // an example line, or `convsvc ...`
	sub := func(c *cobra.Command, name string) *cobra.Command {
		for _, s := range c.Commands() {
			if s.Name() == name || s.HasAlias(name) {
				return s
			}
		}
		return nil
	}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.HasSubCommands() {
			if m := list.FindStringSubmatch(c.Short); m != nil {
				words := append([]string{m[1], m[3]}, strings.Split(strings.TrimPrefix(m[2], ", "), ", ")...)
				for _, w := range words {
					if w = strings.ToLower(w); w == "" {
						continue
					}
					if v, ok := shortVerbs[w]; ok {
						w = v
					}
					if sub(c, w) == nil {
						t.Errorf("%s: Short %q names %q, not one of its subcommands", c.CommandPath(), c.Short, w)
					}
				}
			}
			for _, m := range quoted.FindAllStringSubmatch(c.Long, -1) {
				if sub(c, m[1]) == nil {
					t.Errorf("%s: Long names `%s`, not one of its subcommands", c.CommandPath(), m[1])
				}
			}
		}
		for _, m := range line.FindAllStringSubmatch(c.Long+"\n"+c.Example, -1) {
			cur := root
			for _, w := range strings.Fields(m[1]) {
				if !cur.HasSubCommands() {
					break
				}
				next := sub(cur, w)
				if next == nil {
					t.Errorf("%s: help names %q, but %s has no subcommand %s", c.CommandPath(), "convsvc"+m[1], cur.CommandPath(), w)
					break
				}
				cur = next
			}
		}
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	walk(root)
}
