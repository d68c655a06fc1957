// Command generate writes re2-unicode.txt: how RE2 as Go's regexp (Alertmanager's engine) answers a
// table of patterns against single Unicode scalars. LinearRegexRE2Tests runs Klaxon's engine over it
// and expects no difference. It is not needed at test time.
//
// Re-run (Debian: apt-get install golang-go):  cd Tests/Fixtures/re2 && go run generate.go > re2-unicode.txt
//
// Format: `# ...` comments; one `I` line listing the inputs (hex scalars); then one line per pattern:
// `P<TAB>pattern<TAB>answers`, answers being `r:` and ranges of input indices that match
// (`3-17,20`), or `b:` and a hex bitset (bit i of the string's nibbles, lowest first), whichever
// is shorter.
package main

import (
	"fmt"
	"os"
	"regexp"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"unicode"
)

func orbit(r rune) []rune {
	out := []rune{r}
	for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
		out = append(out, f)
	}
	return out
}

func main() {
	seen := map[rune]bool{}
	var inputs []rune
	add := func(r rune) {
		if r < 0 || r > unicode.MaxRune || (r >= 0xD800 && r <= 0xDFFF) || seen[r] {
			return
		}
		seen[r] = true
		inputs = append(inputs, r)
	}
	var folded []rune
	for r := rune(0); r <= unicode.MaxRune; r++ {
		if r >= 0xD800 && r <= 0xDFFF {
			continue
		}
		if len(orbit(r)) > 1 {
			folded = append(folded, r)
			add(r)
		}
	}
	for r := rune(0); r < 0x80; r++ {
		add(r)
	}
	for r := rune(0x80); r <= 0x3FFFF; r += 61 {
		add(r)
	}
	for r := rune(0xE0000); r <= 0x10FFFF; r += 4099 {
		add(r)
	}
	for _, r := range []rune{0x378, 0x379, 0x380, 0xFFFE, 0xFFFF, 0x10FFFF, 0xE0001, 0xE007F, 0x200B, 0xAD, 0x600,
		0xE000, 0xF8FF, 0xF0000, 0x100000, 0x85, 0x2028, 0x2029, 0x130, 0x131, 0x17F, 0x212A, 0x212B, 0x1E9E, 0xDF,
		0x3C2, 0x3A3, 0x3C3, 0x1C5, 0x1FBE, 0x345, 0x399, 0x3B9, 0xB5, 0x39C, 0x3BC, 0x1C80, 0x1C88, 0xA64B, 0x13F8,
		0xAB70} {
		add(r)
	}
	sort.Slice(inputs, func(i, j int) bool { return inputs[i] < inputs[j] })

	patterns := []string{
		`\pC`, `\PC`, `\p{C}`, `\p{^C}`, `[\pC]`, `[^\pC]`, `\p{Cc}`, `\p{Cf}`, `\p{Co}`, `\pL`, `\p{Lu}`, `\p{Ll}`,
		`\p{Lt}`, `\p{Lm}`, `\p{Lo}`, `\pM`, `\p{Mn}`, `\pN`, `\p{Nd}`, `\p{Nl}`, `\pP`, `\pS`, `\p{Sm}`, `\pZ`,
		`\p{Zs}`, `\PL`, `\p{Any}`, `.`, `(?s).`, `\w`, `\W`, `\d`, `\s`, `\S`, `[[:alpha:]]`, `[[:^alpha:]]`,
		`[[:upper:]]`, `[[:lower:]]`, `[[:space:]]`, `[[:punct:]]`, `[[:print:]]`, `[[:graph:]]`,
		`(?i)[A-b]`, `(?i)[a-z]`, `(?i)[^a-z]`, `(?i)[k]`, `(?i)[^k]`, `(?i)[s-t]`, `(?i)\w`, `(?i)\W`,
		`(?i)[[:upper:]]`, `(?i)[[:lower:]]`, `(?i)[[:^lower:]]`, `(?i)\p{Lu}`, `(?i)\p{Ll}`, `(?i)\P{Lu}`,
		`(?i)\p{Lt}`, `(?i)[\x{100}-\x{17F}]`, `(?i)[\x{370}-\x{3FF}]`, `(?i)[\x{400}-\x{4FF}]`,
		`(?i)[\x{1E00}-\x{1FFF}]`, `(?i)[\x{2C00}-\x{2CFF}]`, `(?i)[\x{A640}-\x{A7FF}]`, `(?i)[\x{10400}-\x{1E943}]`,
		`(?i)[^\x{100}-\x{24F}]`, `(?i)[ΣK]`, `(?i)[ǅ]`, `(?i)\pL`, `(?i)[\pC]`, `(?i).`,
	}
	for _, r := range folded {
		lit := regexp.QuoteMeta(string(r))
		patterns = append(patterns, "(?i)"+lit)
		if r%7 == 0 {
			patterns = append(patterns, "(?i)["+lit+"]", "(?i)[^"+lit+"]")
		}
	}

	fmt.Printf("# RE2 answers from Go %s regexp, Unicode %s: %d inputs, %d patterns. See generate.go.\n",
		runtime.Version(), unicode.Version, len(inputs), len(patterns))
	var b strings.Builder
	b.WriteString("I")
	for _, r := range inputs {
		b.WriteString(" " + strconv.FormatInt(int64(r), 16))
	}
	fmt.Println(b.String())
	for _, p := range patterns {
		re, err := regexp.Compile(`^(?:` + p + `)$`)
		if err != nil {
			fmt.Fprintln(os.Stderr, p, err)
			os.Exit(1)
		}
		hits := make([]bool, len(inputs))
		for i, r := range inputs {
			hits[i] = re.MatchString(string(r))
		}
		var ranges []string
		for i := 0; i < len(hits); i++ {
			if !hits[i] {
				continue
			}
			j := i
			for j+1 < len(hits) && hits[j+1] {
				j++
			}
			if i == j {
				ranges = append(ranges, strconv.Itoa(i))
			} else {
				ranges = append(ranges, strconv.Itoa(i)+"-"+strconv.Itoa(j))
			}
			i = j
		}
		r := "r:" + strings.Join(ranges, ",")
		var bits strings.Builder
		bits.WriteString("b:")
		for i := 0; i < len(hits); i += 4 {
			v := 0
			for k := 0; k < 4 && i+k < len(hits); k++ {
				if hits[i+k] {
					v |= 1 << k
				}
			}
			bits.WriteString(strconv.FormatInt(int64(v), 16))
		}
		answer := r
		if bits.Len() < len(r) {
			answer = bits.String()
		}
		fmt.Printf("P\t%s\t%s\n", p, answer)
	}
}
