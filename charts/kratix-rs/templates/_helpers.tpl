{{/* Labels of every object: deploy/'s, and Helm's own. */}}
{{- define "kratix-rs.labels" -}}
app.kubernetes.io/name: kratix-rs
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | quote }}
app.kubernetes.io/instance: {{ .Release.Name | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service | quote }}
{{- end -}}

{{/* The controller's selector labels, as in deploy/. */}}
{{- define "kratix-rs.selector" -}}
app.kubernetes.io/name: kratix-rs
app.kubernetes.io/component: controller
{{- end -}}

{{- define "kratix-rs.image" -}}
{{ printf "%s:%s" .Values.image.repository (toString .Values.image.tag) }}
{{- end -}}
