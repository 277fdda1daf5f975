package clitool

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/big"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"
)

// Input types.
const (
	TypeString  = "string"
	TypeInteger = "integer"
	TypeNumber  = "number"
	TypeBoolean = "boolean"
	TypeArray   = "array"
)

// Caps on declarations and calls.
const (
	MaxParams      = 64        // inputs per tool
	MaxEnum        = 256       // enum values per input
	MaxArrayItems  = 1024      // items in one array argument
	MaxNumberBytes = 64        // source text of one number
	MaxArgBytes    = 128 << 10 // one rendered argv element (Linux MAX_ARG_STRLEN)
	MaxArgvBytes   = 1 << 20   // the whole rendered argv
	maxExponent    = 400       // |exponent| of a number's source text
)

var nameRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,63}$`) })

// Param declares one input: a JSON-Schema subset. Zero values mean "not
// set". Numbers (Minimum, Maximum, numeric Default and Enum entries) are
// JSON number text and are compared exactly, never through float64.
type Param struct {
	Name        string
	Type        string // TypeString, TypeInteger, TypeNumber, TypeBoolean or TypeArray
	Description string
	Required    bool
	Default     json.RawMessage // JSON value; nil = none
	Minimum     string          // JSON number text; "" = none (integer, number)
	Maximum     string
	MinLength   int // string, in characters; 0 = none
	MaxLength   int // 0 = none
	MinItems    int // array; 0 = none
	MaxItems    int // 0 = MaxArrayItems
	Enum        []json.RawMessage
	Items       *Param // array: the type of each item (string, integer or number)
	// AllowDash lets a value start with "-" anywhere in argv, and put "@"
	// where a program that reads "@FILE" would take it for a file (see
	// the package doc). It is not part of the inputSchema.
	AllowDash bool
}

// param is a compiled Param.
type param struct {
	Param
	min, max *big.Rat
	enum     []value
	items    *param
	def      *value // compiled Default
	field    string // "input.<name>" or "input.<name>.items"
}

// value is one validated argument. str is what a scalar renders as; items
// holds an array's rendered items.
type value struct {
	typ   string
	str   string
	b     bool
	items []string
	rat   *big.Rat // numbers, for enum comparison
}

func (v value) equal(w value) bool {
	switch v.typ {
	case TypeInteger, TypeNumber:
		return v.rat.Cmp(w.rat) == 0
	case TypeBoolean:
		return v.b == w.b
	}
	return v.str == w.str
}

func compileParam(tool string, p Param, field string, item bool) (*param, error) {
	errf := func(sub, fix, format string, a ...any) error {
		f := field
		if sub != "" {
			f += "." + sub
		}
		return &SpecError{Tool: tool, Field: f, Msg: fmt.Sprintf(format, a...), Fix: fix}
	}
	c := &param{Param: p, field: field}
	switch p.Type {
	case TypeString, TypeInteger, TypeNumber:
	case TypeBoolean, TypeArray:
		if item {
			return nil, errf("type", "items may be string, integer or number", "items of type %s are not supported", p.Type)
		}
	case "":
		return nil, errf("type", "add type: string|integer|number|boolean|array", "type is required")
	default:
		return nil, errf("type", "use string, integer, number, boolean or array", "unknown type %q", p.Type)
	}
	numeric := p.Type == TypeInteger || p.Type == TypeNumber
	for _, b := range []struct {
		name, text string
		dst        **big.Rat
	}{{"minimum", p.Minimum, &c.min}, {"maximum", p.Maximum, &c.max}} {
		if b.text == "" {
			continue
		}
		if !numeric {
			return nil, errf(b.name, "remove it, or make the type integer or number", "%s applies to integer and number inputs only", b.name)
		}
		r, err := parseNumber(b.text)
		if err != nil {
			return nil, errf(b.name, "write a plain decimal number", "%v", err)
		}
		*b.dst = r
	}
	if c.min != nil && c.max != nil && c.min.Cmp(c.max) > 0 {
		return nil, errf("minimum", "make minimum at most maximum", "minimum %s is above maximum %s", p.Minimum, p.Maximum)
	}
	if (p.MinLength != 0 || p.MaxLength != 0) && p.Type != TypeString {
		return nil, errf("minLength", "remove minLength and maxLength", "minLength and maxLength apply to string inputs only")
	}
	if p.MinLength < 0 || p.MaxLength < 0 || (p.MaxLength != 0 && p.MinLength > p.MaxLength) {
		return nil, errf("minLength", "use 0 <= minLength <= maxLength", "minLength %d and maxLength %d are not a valid range", p.MinLength, p.MaxLength)
	}
	if p.Type == TypeArray {
		if p.Items == nil {
			return nil, errf("items", "add items: {type: string}", "an array input needs items")
		}
		it, err := compileParam(tool, *p.Items, field+".items", true)
		if err != nil {
			return nil, err
		}
		c.items = it
		if p.MaxItems == 0 {
			c.MaxItems = MaxArrayItems
		}
		if p.MinItems < 0 || c.MaxItems > MaxArrayItems || p.MinItems > c.MaxItems {
			return nil, errf("minItems", fmt.Sprintf("use 0 <= minItems <= maxItems <= %d", MaxArrayItems), "minItems %d and maxItems %d are not a valid range", p.MinItems, p.MaxItems)
		}
	} else {
		if p.Items != nil {
			return nil, errf("items", "remove items, or make the type array", "items applies to array inputs only")
		}
		if p.MinItems != 0 || p.MaxItems != 0 {
			return nil, errf("minItems", "remove minItems and maxItems, or make the type array", "minItems and maxItems apply to array inputs only")
		}
	}
	if item && (p.Required || p.Default != nil || p.AllowDash || p.Name != "") {
		return nil, errf("", "items take type, description, minimum, maximum, minLength, maxLength and enum", "items cannot have name, required, default or allowDash; set them on the array")
	}
	if p.AllowDash && p.Type == TypeBoolean {
		return nil, errf("allowDash", "remove allowDash", "a boolean never renders a value, so allowDash does not apply")
	}
	if len(p.Enum) > MaxEnum {
		return nil, errf("enum", fmt.Sprintf("keep at most %d values", MaxEnum), "enum has %d values", len(p.Enum))
	}
	if p.Enum != nil && len(p.Enum) == 0 {
		return nil, errf("enum", "list at least one value or remove enum", "enum is empty")
	}
	if p.Type == TypeArray && p.Enum != nil {
		return nil, errf("enum", "put the enum on items", "enum on an array input is not supported")
	}
	var enum []value
	for i, raw := range p.Enum {
		v, err := c.check(raw) // c.enum is still nil here
		if err != nil {
			return nil, errf(fmt.Sprintf("enum[%d]", i), "make every enum value match the type and bounds", "%s", err.Msg)
		}
		enum = append(enum, v)
	}
	c.enum = enum
	if p.Default != nil {
		v, err := c.check(p.Default)
		if err != nil {
			return nil, errf("default", "make the default satisfy the input's own rules", "%s", err.Msg)
		}
		c.def = &v
	}
	return c, nil
}

// argErr is an *ArgError without the tool's name, filled in by the caller.
type argErr struct {
	Reason, Msg string
}

// check validates one JSON value against the compiled param.
func (c *param) check(raw json.RawMessage) (value, *argErr) {
	raw = bytes.TrimSpace(raw)
	v := value{typ: c.Type}
	bad := func(reason, format string, a ...any) (value, *argErr) {
		return value{}, &argErr{Reason: reason, Msg: fmt.Sprintf(format, a...)}
	}
	if len(raw) == 0 {
		return bad(ReasonType, "expected %s", article(c.Type))
	}
	switch c.Type {
	case TypeString:
		if raw[0] != '"' {
			return bad(ReasonType, "expected a string, got %s", jsonKind(raw))
		}
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return bad(ReasonType, "expected a string")
		}
		if strings.IndexByte(s, 0) >= 0 {
			return bad(ReasonNUL, "contains a NUL character, which no argv element can hold")
		}
		n := utf8.RuneCountInString(s)
		if n < c.MinLength {
			return bad(ReasonLength, "is %d characters, below minLength %d", n, c.MinLength)
		}
		if c.MaxLength > 0 && n > c.MaxLength {
			return bad(ReasonLength, "is %d characters, above maxLength %d", n, c.MaxLength)
		}
		v.str = s
	case TypeInteger, TypeNumber:
		if raw[0] != '-' && (raw[0] < '0' || raw[0] > '9') {
			return bad(ReasonType, "expected %s, got %s", article(c.Type), jsonKind(raw))
		}
		r, err := parseNumber(string(raw))
		if err != nil {
			return bad(ReasonType, "%v", err)
		}
		if c.Type == TypeInteger {
			if !r.IsInt() {
				return bad(ReasonType, "expected an integer, got %s", raw)
			}
			v.str = r.Num().String()
		} else {
			v.str = string(raw)
		}
		v.rat = r
		if c.min != nil && r.Cmp(c.min) < 0 {
			return bad(ReasonRange, "%s is below the minimum %s", raw, c.Minimum)
		}
		if c.max != nil && r.Cmp(c.max) > 0 {
			return bad(ReasonRange, "%s is above the maximum %s", raw, c.Maximum)
		}
	case TypeBoolean:
		switch string(raw) {
		case "true":
			v.b = true
		case "false":
		default:
			return bad(ReasonType, "expected a boolean, got %s", jsonKind(raw))
		}
	case TypeArray:
		if raw[0] != '[' {
			return bad(ReasonType, "expected an array, got %s", jsonKind(raw))
		}
		var items []json.RawMessage
		if err := json.Unmarshal(raw, &items); err != nil {
			return bad(ReasonType, "expected an array")
		}
		if len(items) < c.MinItems {
			return bad(ReasonItems, "has %d items, below minItems %d", len(items), c.MinItems)
		}
		if len(items) > c.MaxItems {
			return bad(ReasonItems, "has %d items, above maxItems %d", len(items), c.MaxItems)
		}
		v.items = make([]string, 0, len(items))
		for i, it := range items {
			iv, err := c.items.check(it)
			if err != nil {
				err.Msg = fmt.Sprintf("item %d %s", i, err.Msg)
				return value{}, err
			}
			v.items = append(v.items, iv.str)
		}
	}
	if c.enum != nil {
		ok := false
		for _, e := range c.enum {
			if e.equal(v) {
				ok = true
				break
			}
		}
		if !ok {
			return bad(ReasonEnum, "must be one of %s", enumList(c.Enum))
		}
	}
	return v, nil
}

// parseNumber parses JSON number text exactly. The exponent is bounded so
// that a short text cannot demand a huge rational.
func parseNumber(s string) (*big.Rat, error) {
	if len(s) > MaxNumberBytes {
		return nil, fmt.Errorf("number text is %d bytes, over the %d-byte cap", len(s), MaxNumberBytes)
	}
	if !json.Valid([]byte(s)) || (s[0] != '-' && (s[0] < '0' || s[0] > '9')) {
		return nil, fmt.Errorf("%q is not a JSON number", s)
	}
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		e, err := strconv.Atoi(strings.TrimPrefix(s[i+1:], "+"))
		if err != nil || e > maxExponent || e < -maxExponent {
			return nil, fmt.Errorf("%s is out of range (exponent beyond ±%d)", s, maxExponent)
		}
	}
	r, ok := new(big.Rat).SetString(s)
	if !ok {
		return nil, fmt.Errorf("%q is not a JSON number", s)
	}
	return r, nil
}

func article(t string) string {
	if t == TypeInteger || t == TypeArray {
		return "an " + t
	}
	return "a " + t
}

func jsonKind(raw []byte) string {
	switch raw[0] {
	case '"':
		return "a string"
	case '{':
		return "an object"
	case '[':
		return "an array"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "a number"
}

func enumList(enum []json.RawMessage) string {
	var b strings.Builder
	for i, e := range enum {
		if i > 0 {
			b.WriteString(", ")
		}
		if i == 16 {
			fmt.Fprintf(&b, "… (%d in all)", len(enum))
			break
		}
		b.Write(bytes.TrimSpace(e))
	}
	return b.String()
}

// schemaJSON writes the param as a JSON-Schema object.
func (c *param) schemaJSON(b *bytes.Buffer) {
	b.WriteString(`{"type":`)
	writeString(b, c.Type)
	if c.Description != "" {
		b.WriteString(`,"description":`)
		writeString(b, c.Description)
	}
	if c.Default != nil {
		b.WriteString(`,"default":`)
		compact(b, c.Default)
	}
	if c.Minimum != "" {
		b.WriteString(`,"minimum":` + c.Minimum)
	}
	if c.Maximum != "" {
		b.WriteString(`,"maximum":` + c.Maximum)
	}
	if c.MinLength > 0 {
		fmt.Fprintf(b, `,"minLength":%d`, c.MinLength)
	}
	if c.MaxLength > 0 {
		fmt.Fprintf(b, `,"maxLength":%d`, c.MaxLength)
	}
	if c.Type == TypeArray {
		if c.MinItems > 0 {
			fmt.Fprintf(b, `,"minItems":%d`, c.MinItems)
		}
		fmt.Fprintf(b, `,"maxItems":%d,"items":`, c.MaxItems)
		c.items.schemaJSON(b)
	}
	if c.Enum != nil {
		b.WriteString(`,"enum":[`)
		for i, e := range c.Enum {
			if i > 0 {
				b.WriteByte(',')
			}
			compact(b, e)
		}
		b.WriteByte(']')
	}
	b.WriteByte('}')
}

func writeString(b *bytes.Buffer, s string) {
	j, _ := json.Marshal(s)
	b.Write(j)
}

func compact(b *bytes.Buffer, raw json.RawMessage) {
	if err := json.Compact(b, raw); err != nil {
		b.WriteString("null")
	}
}
