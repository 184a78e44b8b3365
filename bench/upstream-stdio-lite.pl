#!/usr/bin/perl
# bench/upstream-stdio.mjs's protocol (initialize, ping, tools/list of one `echo` tool,
# tools/call of it; anything else Method not found; one JSON-RPC message per line) in Perl: a
# child that costs about 3 ms of CPU to start where a Node one costs 100 ms, for the lazy
# section's 1,000 sessions that each spawn one (bench/lazy.mjs, measurement 5). It reads the
# gateway's messages with patterns, not a JSON parser: enough for what the gateway sends
# (JSON.stringify's compact text, the top-level id before params).
use strict;
use warnings;

$| = 1;
my $str = qr/"((?:[^"\\]|\\.)*)"/;
while (my $line = <STDIN>) {
  # A response (no method) or a notification (no id) is answered with nothing.
  next unless $line =~ /"method":$str/;
  my $method = $1;
  next unless $line =~ /"id":("(?:[^"\\]|\\.)*"|-?\d+)/;
  my $id = $1;
  my $result;
  if ($method eq 'initialize') {
    my ($version) = $line =~ /"protocolVersion":$str/;
    $version //= '2025-06-18';
    $result = qq({"protocolVersion":"$version","capabilities":{"tools":{}},"serverInfo":{"name":"bench-upstream-lite","version":"1"}});
  } elsif ($method eq 'ping') {
    $result = '{}';
  } elsif ($method eq 'tools/list') {
    $result = '{"tools":[{"name":"echo","description":"echoes its message","inputSchema":{"type":"object","properties":{"message":{"type":"string"}},"required":["message"]}}]}';
  } elsif ($method eq 'tools/call') {
    my ($message) = $line =~ /"message":$str/;
    $message //= '';
    $result = qq({"content":[{"type":"text","text":"$message"}]});
  }
  print defined $result ? qq({"jsonrpc":"2.0","id":$id,"result":$result}\n) : qq({"jsonrpc":"2.0","id":$id,"error":{"code":-32601,"message":"Method not found"}}\n);
}
