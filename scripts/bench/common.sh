# Shared by the benchmark scripts: the platform every bench applies, up to its pipelines.

# A GitStateStore named $1 at URL $2, Destination `worker` (environment: bench) on it, and the
# Promise `thing` (kind Thing, spec.size) up to `workflows.resource.configure:`; the caller
# prints its pipelines after it.
bench_platform_head() {
    cat <<YAML
apiVersion: platform.kratix.io/v1alpha1
kind: GitStateStore
metadata: {name: $1}
spec:
  url: $2
  branch: main
---
apiVersion: platform.kratix.io/v1alpha1
kind: Destination
metadata: {name: worker, labels: {environment: bench}}
spec:
  path: worker
  stateStoreRef: {kind: GitStateStore, name: $1}
---
apiVersion: platform.kratix.io/v1alpha1
kind: Promise
metadata: {name: thing}
spec:
  destinationSelectors: [{matchLabels: {environment: bench}}]
  api:
    apiVersion: apiextensions.k8s.io/v1
    kind: CustomResourceDefinition
    metadata: {name: things.bench.kratix.io}
    spec:
      group: bench.kratix.io
      names: {kind: Thing, plural: things, singular: thing}
      scope: Namespaced
      versions:
        - name: v1
          served: true
          storage: true
          schema:
            openAPIV3Schema:
              type: object
              properties:
                spec: {type: object, properties: {size: {type: integer}}}
  workflows:
    resource:
      configure:
YAML
}
