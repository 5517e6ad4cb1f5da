package engine

import (
	"os"
	"path/filepath"
	"strings"
)

// directArgv returns the program and arguments to run in place of argv
// when argv is ["sh", "-c", line] and line is a plain command that sh
// would run as one program with its words as arguments: then starting
// the program itself saves a fork and an exec of the shell per phase, as
// GNU make does for recipes without shell syntax. The program is looked
// up as sh would look it up: in the PATH of the job's environment,
// relative entries and paths with a slash from dir. ok is false whenever
// the shell could do anything else with line (quoting, expansion,
// redirection, operators, comments, assignments, builtins and keywords,
// a program not found): the shell then runs it, as before.
func directArgv(argv, env []string, dir string) (path string, args []string, ok bool) {
	if len(argv) != 3 || argv[0] != "sh" || argv[1] != "-c" {
		return "", nil, false
	}
	words, ok := plainWords(argv[2])
	if !ok || shellWords[words[0]] || strings.ContainsRune(words[0], '=') {
		return "", nil, false
	}
	path, ok = lookPathEnv(words[0], env, dir)
	if !ok {
		return "", nil, false
	}
	return path, words, true
}

// plainWords splits line at blanks if it holds only characters that sh
// gives no meaning to (letters, digits and -_./,:+@%=) and blanks.
func plainWords(line string) ([]string, bool) {
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case c == ' ' || c == '\t':
		case strings.IndexByte("-_./,:+@%=", c) >= 0:
		default:
			return nil, false
		}
	}
	words := strings.Fields(line)
	return words, len(words) > 0
}

// shellWords are the reserved words and builtins of POSIX sh and dash: a
// command starting with one runs through the shell, even where a program
// of the same name exists (echo, test, pwd and kill differ in details).
var shellWords = map[string]bool{}

func init() {
	for _, w := range strings.Fields(`! { } case do done elif else esac fi for if in then until while
		. : [ alias bg break cd chdir command continue echo eval exec exit export false fg getopts
		hash jobs kill local printf pwd read readonly return set shift test times trap true type
		ulimit umask unalias unset wait`) {
		shellWords[w] = true
	}
}

// lookPathEnv finds the program name as sh would with the environment
// env, in the directory dir: a name with a slash as it is, else the first
// executable regular file in the directories of env's PATH.
func lookPathEnv(name string, env []string, dir string) (string, bool) {
	if strings.ContainsRune(name, '/') {
		p := name
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, p)
		}
		return p, executable(p)
	}
	path := ""
	for _, kv := range env {
		if strings.HasPrefix(kv, "PATH=") {
			path = kv[len("PATH="):] // the last one wins, as in the child
		}
	}
	for _, d := range filepath.SplitList(path) {
		if d == "" {
			d = "."
		}
		if !filepath.IsAbs(d) {
			d = filepath.Join(dir, d)
		}
		if p := filepath.Join(d, name); executable(p) {
			return p, true
		}
	}
	return "", false
}

func executable(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular() && st.Mode().Perm()&0o111 != 0
}
