package mcpserver

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"time"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/google/jsonschema-go/jsonschema"

	"github.com/mcp-elicit/elicit/internal/typeschema"
	"github.com/mcp-elicit/elicit/jsonrpc"
	"github.com/mcp-elicit/elicit/mcp"
)

// ToolHandlerFor is the handler of a typed tool (AddTool). It receives the
// decoded arguments and returns one of:
//
//   - a nil Reply and the output: the complete result, with out as
//     structuredContent and its JSON as the one text block;
//   - an *InputRequired (built with Ask): the interim result, and out is
//     ignored; the handler runs again on the retry, with the same in;
//   - ToolError(text): the tool failed (isError), and out is ignored;
//   - Text or ToolResult: a complete result with that content, and out as
//     structuredContent (the reply itself must not set it). When Out is an
//     interface type (no outputSchema), the reply is sent as it is, and a
//     non-nil out becomes its structuredContent.
//
// Make Out a pointer (*T, whose schema is T's) so that the replies that
// carry no output return nil for it, not a T{}:
//
//	func refund(ctx context.Context, req *mcpserver.Request, in Args) (mcpserver.Reply, *Refunded, error) {
//		...
//		return mcpserver.ToolError("No refund was made: you declined."), nil, nil
//	}
//
// An error is handled as for Handler: a *jsonrpc.Error goes to the client
// as is, any other becomes -32603 and is logged.
type ToolHandlerFor[In, Out any] func(ctx context.Context, req *Request, in In) (Reply, Out, error)

// AddTool registers a typed tool on s: the input schema is inferred from
// In and the output schema from Out, and the handler gets the arguments
// decoded into an In.
//
// In must be a struct (or a map with string keys, or a pointer to one);
// its schema follows github.com/google/jsonschema-go: exported fields by
// their json names, required unless tagged omitempty or omitzero, no
// other members allowed. Struct tags refine it, each named after the JSON
// Schema keyword it sets; lists are separated by "|":
//
//	type Args struct {
//		Period  string   `json:"period" description:"YYYY-MM or YYYY-Qn" pattern:"^[0-9]{4}-(0[1-9]|1[0-2]|Q[1-4])$"`
//		Dataset string   `json:"dataset" enum:"sales|support|usage"`
//		Limit   int      `json:"limit,omitempty" minimum:"1" maximum:"100" default:"10"`
//		To      string   `json:"to" format:"email" maxLength:"254"`
//		Tags    []string `json:"tags,omitempty" maxItems:"5" maxLength:"20"`
//		Region  string   `json:"region" header:"Region"`
//	}
//
// title, description (or the jsonschema tag), enum, pattern, format
// (email, uri, date, date-time), minLength and maxLength, minimum and
// maximum, minItems and maxItems, and default; on a list, the value
// keywords apply to its items. header sets the x-mcp-header annotation
// (server/tools.mdx §x-mcp-header). A time.Time is a date-time string.
//
// Arguments are decoded strictly, before the handler runs: a member In
// does not have, a missing required member, a value of the wrong type or
// one that breaks a constraint is refused with -32602 naming the member
// and the rule, never the value sent. An absent optional member with a
// default gets it.
//
// Out must be a struct, a map with string keys or a pointer to one (the
// outputSchema, and structuredContent is that object: 2025-11-25 clients
// require one), or an interface type such as any, which declares no
// outputSchema and sends structuredContent only when out is not nil.
//
// AddTool panics, as Server.AddTool does, on a programming error: a tool
// that sets InputSchema or OutputSchema itself (use Server.AddTool for a
// hand-written schema), an In or Out that has no schema of that shape, or
// a tag that does not fit its field.
func AddTool[In, Out any](s *Server, t *mcp.Tool, h ToolHandlerFor[In, Out]) {
	AddToolWith(s, t, h, nil)
}

// AddToolWith is AddTool with handler options (nil means the defaults).
func AddToolWith[In, Out any](s *Server, t *mcp.Tool, h ToolHandlerFor[In, Out], o *HandlerOptions) {
	tt, raw, err := typedTool(t, h)
	if err != nil {
		panic(fmt.Sprintf("mcpserver: tool %q: %v", t.Name, err))
	}
	s.AddToolWith(tt, raw, o)
}

func typedTool[In, Out any](t *mcp.Tool, h ToolHandlerFor[In, Out]) (*mcp.Tool, Handler, error) {
	if t.InputSchema != nil || t.OutputSchema != nil {
		return nil, nil, errors.New("a typed tool infers InputSchema and OutputSchema; leave them nil (Server.AddTool takes hand-written schemas)")
	}
	tt := *t
	inSchema, inJSON, err := inferObject(reflect.TypeFor[In]())
	if err != nil {
		return nil, nil, fmt.Errorf("input: %w", err)
	}
	in, err := compileSchema(inSchema)
	if err != nil {
		return nil, nil, fmt.Errorf("input: %w", err)
	}
	tt.InputSchema = inJSON
	var out *node
	outType := reflect.TypeFor[Out]()
	if outType.Kind() != reflect.Interface {
		outSchema, outJSON, err := inferObject(outType)
		if err != nil {
			return nil, nil, fmt.Errorf("output: %w", err)
		}
		if out, err = compileSchema(outSchema); err != nil {
			return nil, nil, fmt.Errorf("output: %w", err)
		}
		tt.OutputSchema = outJSON
	}
	return &tt, func(ctx context.Context, req *Request) (Reply, error) {
		var args In
		if err := decodeArguments(req.Arguments, in, &args); err != nil {
			return nil, err
		}
		reply, res, err := h(ctx, req, args)
		if err != nil {
			return nil, err
		}
		return typedReply(reply, res, out)
	}, nil
}

// typedReply merges the handler's reply and output into the reply to send.
func typedReply[Out any](reply Reply, res Out, schema *node) (Reply, error) {
	var base mcp.CallToolResult
	switch r := reply.(type) {
	case nil:
	case toolReply:
		if r.r == nil || r.r.IsError || schema == nil && r.r.StructuredContent != nil {
			return reply, nil
		}
		if r.r.StructuredContent != nil {
			return nil, errors.New("a typed tool's structuredContent comes from its output, not from the reply")
		}
		base = *r.r
	default:
		return reply, nil // an *InputRequired, or a reply serveMRTR refuses
	}
	v := any(res)
	if rv := reflect.ValueOf(&res).Elem(); rv.Kind() == reflect.Pointer && rv.IsNil() {
		v = reflect.Zero(rv.Type().Elem()).Interface() // a nil *T output is the zero T
	} else if rv.Kind() == reflect.Interface && rv.IsNil() {
		v = nil
	}
	if v != nil {
		b, err := jsonv2.Marshal(v, jsonv2.Deterministic(true))
		if err != nil {
			return nil, fmt.Errorf("encoding the tool's output: %w", err)
		}
		if schema != nil {
			var check any
			if err := jsonv2.Unmarshal(b, &check); err != nil {
				return nil, fmt.Errorf("reading back the tool's output: %w", err)
			}
			if probs := schema.validate(check, "", nil); len(probs) > 0 {
				return nil, fmt.Errorf("the tool's output does not fit its outputSchema: %s", joinProblems(probs))
			}
		}
		base.StructuredContent = json.RawMessage(b)
		if base.Content == nil {
			base.Content = []mcp.Content{mcp.TextContent(string(b))}
		}
	}
	return ToolResult(&base), nil
}

var timeType = reflect.TypeFor[time.Time]()

// inferObject infers the schema of a struct or map type t (or a pointer
// to one) and applies the schema tags of its fields; the root is "type":
// "object".
func inferObject(t reflect.Type) (*jsonschema.Schema, json.RawMessage, error) {
	base := t
	for base.Kind() == reflect.Pointer {
		base = base.Elem()
	}
	if (base.Kind() != reflect.Struct || base == timeType) && (base.Kind() != reflect.Map || base.Key().Kind() != reflect.String) {
		return nil, nil, fmt.Errorf("%s is not a struct or a map with string keys: the schema must be a JSON object", t)
	}
	s, err := jsonschema.ForType(base, nil)
	if err != nil {
		return nil, nil, err
	}
	if err := applyTags(base, s, ""); err != nil {
		return nil, nil, err
	}
	raw, err := json.Marshal(s)
	if err != nil {
		return nil, nil, err
	}
	return s, raw, nil
}

// applyTags walks the schema inferred for t and adds what the struct tags
// of t's fields (and of the structs inside it) say.
func applyTags(t reflect.Type, s *jsonschema.Schema, path string) error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if s == nil {
		return nil
	}
	switch t.Kind() {
	case reflect.Struct:
		if t == timeType {
			s.Format = "date-time"
			return nil
		}
		for _, f := range typeschema.Fields(t) {
			ps := s.Properties[f.Name]
			if ps == nil {
				continue
			}
			p := f.Name
			if path != "" {
				p = path + "." + f.Name
			}
			tags, err := typeschema.ParseTags(f.StructField)
			if err == nil {
				err = applyFieldTags(f.Type, ps, tags)
			}
			if err != nil {
				return fmt.Errorf("field %s (%q): %w", f.StructField.Name, p, err)
			}
			if err := applyTags(f.Type, ps, p); err != nil {
				return err
			}
		}
	case reflect.Slice, reflect.Array:
		return applyTags(t.Elem(), s.Items, path+"[]")
	case reflect.Map:
		return applyTags(t.Elem(), s.AdditionalProperties, path+"{}")
	}
	return nil
}

// applyFieldTags adds what a field's tags say to s, the schema inferred
// for it: title, description and x-mcp-header on the field; the value
// keywords on its value, or on its items when it is a list.
func applyFieldTags(ft reflect.Type, s *jsonschema.Schema, tg typeschema.Tags) error {
	for ft.Kind() == reflect.Pointer {
		ft = ft.Elem()
	}
	if tg.EnumTitles != nil || tg.NotSecret != "" {
		return errors.New("enumTitles and notSecret are for forms (elicit.FormFor), not tool arguments")
	}
	s.Title, s.Description = cmp.Or(tg.Title, s.Title), cmp.Or(tg.Description, s.Description)
	if tg.Header != "" {
		if s.Extra == nil {
			s.Extra = map[string]any{}
		}
		s.Extra["x-mcp-header"] = tg.Header
	}
	// On a list, the value keywords constrain the items.
	target, elem := s, ft
	isList := (ft.Kind() == reflect.Slice || ft.Kind() == reflect.Array) && s.Items != nil
	if isList {
		target, elem = s.Items, ft.Elem()
		for elem.Kind() == reflect.Pointer {
			elem = elem.Elem()
		}
		s.MinItems, s.MaxItems = cmp.Or(tg.MinItems, s.MinItems), cmp.Or(tg.MaxItems, s.MaxItems)
	} else if tg.MinItems != nil || tg.MaxItems != nil {
		return errors.New("minItems and maxItems apply to lists")
	}
	if err := applyValueTags(target, elem.Kind(), tg); err != nil {
		return err
	}
	if !tg.HasDefault {
		return nil
	}
	def, err := tagDefault(elem.Kind(), tg.Default, isList)
	if err != nil {
		return err
	}
	s.Default, _ = json.Marshal(def)
	return nil
}

// applyValueTags sets the keywords that constrain a value of kind k:
// pattern, format and lengths on strings, bounds on numbers, and enum.
func applyValueTags(target *jsonschema.Schema, k reflect.Kind, tg typeschema.Tags) error {
	isString := k == reflect.String
	isNumber := k >= reflect.Int && k <= reflect.Float64
	if (tg.Pattern != "" || tg.Format != "" || tg.MinLength != nil || tg.MaxLength != nil) && !isString {
		return errors.New("pattern, format, minLength and maxLength apply to strings")
	}
	if (tg.Minimum != nil || tg.Maximum != nil) && !isNumber {
		return errors.New("minimum and maximum apply to numbers")
	}
	target.Pattern, target.Format = tg.Pattern, cmp.Or(tg.Format, target.Format)
	target.MinLength, target.MaxLength = cmp.Or(tg.MinLength, target.MinLength), cmp.Or(tg.MaxLength, target.MaxLength)
	target.Minimum, target.Maximum = cmp.Or(tg.Minimum, target.Minimum), cmp.Or(tg.Maximum, target.Maximum)
	for _, e := range tg.Enum {
		v, err := typeschema.Scalar(k, e)
		if err != nil {
			return fmt.Errorf("enum entry %q: %v", e, err)
		}
		target.Enum = append(target.Enum, v)
	}
	return nil
}

// tagDefault reads a default tag as a value of kind k, or as a list of
// them separated by "|".
func tagDefault(k reflect.Kind, raw string, isList bool) (any, error) {
	if !isList {
		v, err := typeschema.Scalar(k, raw)
		if err != nil {
			return nil, fmt.Errorf("default %q: %v", raw, err)
		}
		return v, nil
	}
	var list []any
	for _, e := range strings.Split(raw, "|") {
		v, err := typeschema.Scalar(k, e)
		if err != nil {
			return nil, fmt.Errorf("default entry %q: %v", e, err)
		}
		list = append(list, v)
	}
	return list, nil
}

// decodeArguments checks the raw arguments against the schema and decodes
// them into v (see AddTool). Absent arguments read as {}.
func decodeArguments(raw json.RawMessage, schema *node, v any) error {
	if len(raw) == 0 || string(raw) == "null" {
		raw = json.RawMessage("{}")
	}
	var tree any
	if err := jsonv2.Unmarshal(raw, &tree); err != nil {
		return jsonrpc.NewError(jsonrpc.CodeInvalidParams, "Invalid params: %s", argumentProblem(err))
	}
	changed := false
	if probs := schema.validate(tree, "", &changed); len(probs) > 0 {
		return jsonrpc.NewError(jsonrpc.CodeInvalidParams, "Invalid params: %s", joinProblems(probs))
	}
	if changed { // defaults were filled in
		b, err := jsonv2.Marshal(tree)
		if err != nil {
			return err
		}
		raw = b
	}
	return bindStrict(raw, v)
}

// bindStrict decodes a JSON object into v: member names match exactly,
// and unknown or repeated members are refused with -32602 naming them.
func bindStrict(raw json.RawMessage, v any) error {
	if err := jsonv2.Unmarshal(raw, v, jsonv2.RejectUnknownMembers(true)); err != nil {
		return jsonrpc.NewError(jsonrpc.CodeInvalidParams, "Invalid params: %s", argumentProblem(err))
	}
	return nil
}
