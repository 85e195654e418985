package main

import "encoding/json"

// Fixture data of the conformance "everything" server. The names and
// texts are the ones the official suite (@modelcontextprotocol/conformance,
// run by scripts/conformance) looks for: the fixture inventory of its
// reference everything-server and the scenarios noted below.

// pngBase64 is a valid 1×1 PNG (one opaque red pixel).
const pngBase64 = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQDJ/pLvAAAAAElFTkSuQmCC"

// wavBase64 is a minimal valid WAV: RIFF/WAVE, PCM, mono, 8 kHz, 8-bit,
// eight samples of silence (52 bytes).
const wavBase64 = "UklGRiwAAABXQVZFZm10IBAAAAABAAEAQB8AAEAfAAABAAgAZGF0YQgAAACAgICAgICAgA=="

// Texts checked by the suite.
const (
	simpleText           = "This is a simple text response for testing."
	embeddedResourceText = "This is an embedded resource content."
	errorToolText        = "This tool intentionally returns an error for testing"
	mixedIntroText       = "Multiple content types test:"
	mixedResourceJSON    = `{"test":"data","value":123}`
	staticText           = "This is the content of the static text resource."
	simplePromptText     = "This is a simple prompt for testing."
	promptResourceText   = "Embedded resource content for testing."
	promptResourceAsk    = "Please process the embedded resource above."
	promptImageAsk       = "Please analyze the image above."
)

// URIs of the fixtures.
const (
	uriEmbedded     = "test://embedded-resource"
	uriMixed        = "test://mixed-content-resource"
	uriStaticText   = "test://static-text"
	uriStaticBinary = "test://static-binary"
	uriTemplate     = "test://template/{id}/data"
)

// Elicitation schemas of the MRTR fixtures (the suite's
// input-required-result-* scenarios), in the shape
// the suite documents.
var (
	schemaName    = json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}`)
	schemaOK      = json.RawMessage(`{"type":"object","properties":{"ok":{"type":"boolean"}},"required":["ok"]}`)
	schemaColor   = json.RawMessage(`{"type":"object","properties":{"color":{"type":"string"}},"required":["color"]}`)
	schemaContext = json.RawMessage(`{"type":"object","properties":{"context":{"type":"string"}},"required":["context"]}`)
)

// schema2020 is the input schema of json_schema_2020_12_tool, kept as raw
// JSON so that every 2020-12 keyword reaches tools/list verbatim
// (the suite's json-schema-2020-12 scenario).
var schema2020 = json.RawMessage(`{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "type": "object",
  "$defs": {
    "address": {
      "$anchor": "addressDef",
      "type": "object",
      "properties": {
        "street": {"type": "string"},
        "city": {"type": "string"}
      }
    }
  },
  "properties": {
    "name": {"type": "string"},
    "address": {"$ref": "#/$defs/address"},
    "contactMethod": {"type": "string", "enum": ["phone", "email"]},
    "phone": {"type": "string"},
    "email": {"type": "string"}
  },
  "allOf": [
    {"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}
  ],
  "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
  "then": {"required": ["phone"]},
  "else": {"required": ["email"]},
  "additionalProperties": false
}`)

// schemaCustomHeader is the input schema of test_custom_header: a string
// property mirrored into the Mcp-Param-Region header (the suite's
// http-custom-header-server-validation scenario).
var schemaCustomHeader = json.RawMessage(`{"type":"object","properties":{"region":{"type":"string","description":"Cloud region, also sent as the Mcp-Param-Region header","x-mcp-header":"Region"}},"required":["region"]}`)
