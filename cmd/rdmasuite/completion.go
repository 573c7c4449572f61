package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"sort"
	"strings"
)

// Shell completion: the scripts ask the binary itself
// (rdmasuite __complete WORDS...), so commands and flags never drift from
// what the binary accepts. zsh runs the bash function through bashcompinit.
const bashCompletion = `# rdmasuite completion for bash: source <(rdmasuite completion bash)
_rdmasuite() {
  local IFS=$'\n'
  COMPREPLY=($(compgen -W "$(rdmasuite __complete "${COMP_WORDS[@]:1:COMP_CWORD}" 2>/dev/null)" -- "${COMP_WORDS[COMP_CWORD]}"))
}
complete -o default -F _rdmasuite rdmasuite
`

const zshCompletion = `# rdmasuite completion for zsh: source <(rdmasuite completion zsh)
autoload -U +X bashcompinit && bashcompinit
` + bashCompletion

// fish asks the same helper with the words before the cursor and the
// one being typed; files stay fish's own completion.
const fishCompletion = `# rdmasuite completion for fish: rdmasuite completion fish | source
function __rdmasuite_complete
    set -l words (commandline -opc) (commandline -ct)
    rdmasuite __complete $words[2..-1] 2>/dev/null
end
complete -c rdmasuite -a '(__rdmasuite_complete)'
`

func runCompletion(args []string, stdout io.Writer) error {
	if len(args) != 1 {
		return errors.New("give the shell: rdmasuite completion bash|zsh|fish (then: source <(rdmasuite completion bash), or rdmasuite completion fish | source)")
	}
	switch args[0] {
	case "bash":
		fmt.Fprint(stdout, bashCompletion)
	case "zsh":
		fmt.Fprint(stdout, zshCompletion)
	case "fish":
		fmt.Fprint(stdout, fishCompletion)
	case "-h", "-help", "--help":
		return &helpError{command: "completion"}
	default:
		return fmt.Errorf("unknown shell %q: bash, zsh or fish", args[0])
	}
	return nil
}

// complete prints the candidates for the last of words (the words typed
// after "rdmasuite", the last one being completed), one per line.
func complete(words []string, stdout io.Writer) {
	if len(words) <= 1 {
		for _, c := range append(append([]string{}, commandOrder...), "help") {
			fmt.Fprintln(stdout, c)
		}
		return
	}
	cmd, cur := words[0], words[len(words)-1]
	switch {
	case cmd == "completion":
		fmt.Fprintln(stdout, "bash\nzsh\nfish")
		return
	case cmd == "help":
		for _, c := range commandOrder {
			fmt.Fprintln(stdout, c)
		}
		return
	case cmd == "thresholds" && len(words) == 2 && !strings.HasPrefix(cur, "-"):
		fmt.Fprintln(stdout, "check\nlist\ncalibrate")
		return
	}
	if !strings.HasPrefix(cur, "-") {
		return // files: the shell's default completion (-o default)
	}
	for _, f := range commandFlags(cmd) {
		if len(f) == 1 {
			fmt.Fprintln(stdout, "-"+f) // -o, as the help spells it
		} else {
			fmt.Fprintln(stdout, "--"+f)
		}
	}
}

// commandFlags are a command's flag names, read from the flag set its
// --help returns (the one source of truth).
func commandFlags(cmd string) []string {
	var err error
	switch cmd {
	case "report":
		err = runReport([]string{"--help"}, io.Discard)
	case "push":
		err = runPush([]string{"--help"}, io.Discard)
	case "doctor":
		err = runDoctor([]string{"--help"}, io.Discard)
	case "cleanup":
		err = runCleanup([]string{"--help"}, io.Discard)
	case "run":
		err = runJob([]string{"--help"}, io.Discard, io.Discard)
	case "results":
		err = runResults([]string{"--help"}, io.Discard, io.Discard)
	case "thresholds":
		return []string{"replace", "overlay", "help"}
	default:
		return []string{"help"}
	}
	var h *helpError
	if !errors.As(err, &h) || h.fs == nil {
		return []string{"help"}
	}
	var names []string
	h.fs.VisitAll(func(f *flag.Flag) { names = append(names, f.Name) })
	sort.Strings(names)
	return append(names, "help")
}
