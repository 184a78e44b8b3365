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

{{/* The gateway.yaml: .Values.config, with the drain and TLS settings the pod spec relies on. */}}
{{- define "switchyard.gatewayConfig" -}}
{{- $config := deepCopy .Values.config -}}
{{- $_ := set $config "shutdown" (dict "gracePeriod" (printf "%ds" (int .Values.drainSeconds))) -}}
{{- if .Values.tls.enabled -}}
{{- $tls := dict "cert" "/etc/switchyard/tls/tls.crt" "key" "/etc/switchyard/tls/tls.key" -}}
{{- if .Values.tls.clientCaSecret -}}{{- $_ := set $tls "ca" "/etc/switchyard/client-ca/ca.crt" -}}{{- end -}}
{{- $_ := set $config.listen "tls" $tls -}}
{{- end -}}
{{- toYaml $config -}}
{{- end -}}
