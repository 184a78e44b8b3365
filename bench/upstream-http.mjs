// The bench's minimal MCP upstream over Streamable HTTP: upstream-shapes.mjs with its defaults
// (initialize issues a session id, notifications 202, tools/list and an `echo` tool answered as
// JSON, GET 405). Prints `listening on URL`.
import './upstream-shapes.mjs';
