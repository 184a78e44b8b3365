{{/* Names and labels shared by every template. */}}
{{- define "switchyard.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}{{ .Release.Name | trunc 63 | trimSuffix "-" }}{{- else -}}{{ printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" }}{{- end -}}
{{- end -}}

{{- define "switchyard.labels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{- define "switchyard.selectorLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "switchyard.sessionSecret" -}}
{{- if .Values.sessionKeys.existingSecret -}}{{ .Values.sessionKeys.existingSecret }}{{- else -}}{{ include "switchyard.fullname" . }}-session{{- end -}}
{{- end -}}

{{/* How many previous session keys the pods get, as SESSION_KEY_PREVIOUS_1..n. */}}
{{- define "switchyard.previousKeyCount" -}}
{{- if .Values.sessionKeys.existingSecret -}}
{{- len (.Values.sessionKeys.existingSecretPreviousKeys | default (list)) -}}
{{- else -}}
{{- len (.Values.sessionKeys.previousKeys | default (list)) -}}
{{- end -}}
{{- end -}}

{{/* The Secret holding the Redis URL; empty without redis. */}}
{{- define "switchyard.redisSecret" -}}
{{- if .Values.redis.existingSecret -}}{{ .Values.redis.existingSecret }}{{- else if .Values.redis.url -}}{{ include "switchyard.fullname" . }}-redis{{- end -}}
{{- end -}}

{{/* What the chart's own Secrets are made from: a change rolls the pods (env is read at start). */}}
{{- define "switchyard.secretInputs" -}}
{{- toJson (dict "sessionKeys" .Values.sessionKeys "redis" .Values.redis "upstreamCredentials" .Values.upstreamCredentials) -}}
{{- end -}}

{{/*
The gateway.yaml: .Values.config, with the drain and TLS settings the pod spec relies on, the
previous session keys after the configured ones, and the shared Redis in every store the config
leaves unset.
*/}}
{{- define "switchyard.gatewayConfig" -}}
{{- $config := deepCopy .Values.config -}}
{{- if not $config.upstreams -}}{{- $_ := set $config "upstreams" (deepCopy .Values.exampleUpstreams) -}}{{- end -}}
{{- $_ := set $config "shutdown" (dict "gracePeriod" (printf "%ds" (int .Values.drainSeconds))) -}}
{{- $sessions := get $config "sessions" | default (dict) -}}
{{- if and .Values.sessionKeys.previousKeys .Values.sessionKeys.existingSecret -}}
{{- fail "sessionKeys.previousKeys go into the chart's Secret, which existingSecret replaces: name the keys of your Secret in sessionKeys.existingSecretPreviousKeys" -}}
{{- end -}}
{{- $previous := int (include "switchyard.previousKeyCount" .) -}}
{{- if gt $previous 0 -}}
{{- if not $sessions.keys -}}
{{- fail "previous session keys need config.sessions.keys (its first key seals, the previous ones are appended after it)" -}}
{{- end -}}
{{- $keys := $sessions.keys -}}
{{- range $i := until $previous -}}{{- $keys = append $keys (printf "${SESSION_KEY_PREVIOUS_%d}" (add1 $i)) -}}{{- end -}}
{{- $_ := set $sessions "keys" $keys -}}
{{- $_ := set $config "sessions" $sessions -}}
{{- end -}}
{{- if include "switchyard.redisSecret" . -}}
{{- $url := "${SWITCHYARD_REDIS_URL}" -}}
{{- if not (hasKey $sessions "store") -}}
{{- $_ := set $sessions "store" (dict "redis" (dict "url" $url "prefix" (printf "%ssess:" .Values.redis.prefix))) -}}
{{- $_ := set $config "sessions" $sessions -}}
{{- end -}}
{{- with $config.rateLimits -}}
{{- if not (hasKey . "store") -}}{{- $_ := set . "store" (dict "redis" (dict "url" $url "prefix" $.Values.redis.prefix)) -}}{{- end -}}
{{- end -}}
{{- with $config.credentials -}}
{{- if not (hasKey . "store") -}}{{- $_ := set . "store" (dict "redis" (dict "url" $url "prefix" (printf "%scred:" $.Values.redis.prefix))) -}}{{- end -}}
{{- end -}}
{{- end -}}
{{- if .Values.tls.enabled -}}
{{- $tls := dict "cert" "/etc/switchyard/tls/tls.crt" "key" "/etc/switchyard/tls/tls.key" -}}
{{- if .Values.tls.clientCaSecret -}}{{- $_ := set $tls "ca" "/etc/switchyard/client-ca/ca.crt" -}}{{- end -}}
{{- $_ := set $config.listen "tls" $tls -}}
{{- end -}}
{{- toYaml $config -}}
{{- end -}}
