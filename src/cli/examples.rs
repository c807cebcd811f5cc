//! The Examples section of each command's `--help`.

pub(super) const TOP: &str = "\
Examples:
  kratix-rs apply -f promise.yaml          # install a Promise and wait for it
  kratix-rs get promises                   # list Promises with their status
  kratix-rs --home /srv/kratix serve       # run the controllers of another home";

pub(super) const APPLY: &str = "\
Examples:
  kratix-rs apply -f promise.yaml
  kratix-rs apply -f manifests/ --timeout 120
  cat request.yaml | kratix-rs apply -f - --no-wait
  kratix-rs apply -f manifests/ -o json     # one JSON event per line, for scripts
  kratix-rs apply -f manifests/ --quiet     # no progress, only the result lines";

pub(super) const DIFF: &str = "\
Examples:
  kratix-rs diff -f request.yaml
  kratix-rs diff -f manifests/ && echo 'nothing would change'
  cat promise.yaml | kratix-rs diff -f - > preview.patch";

pub(super) const DELETE: &str = "\
Examples:
  kratix-rs delete -f request.yaml
  kratix-rs delete promise postgresql
  kratix-rs delete postgresql acme-db -n team-a --no-wait";

pub(super) const GET: &str = "\
Examples:
  kratix-rs get promises
  kratix-rs get resourcebindings -A
  kratix-rs get destinations -o wide
  kratix-rs get workplacements -A --show-labels
  kratix-rs get pipelineruns -n default -l kratix.io/promise-name=postgresql
  kratix-rs get promise postgresql -o yaml
  kratix-rs get works -A -o name
  kratix-rs get postgresql -A -w            # the rows, then a row per change
  kratix-rs get promises -w --timeout 60 -o json";

pub(super) const DESCRIBE: &str = "\
Examples:
  kratix-rs describe promise postgresql
  kratix-rs describe postgresql acme-db -n team-a
  kratix-rs describe destination worker-1";

pub(super) const EVENTS: &str = "\
Examples:
  kratix-rs events                          # events in namespace default
  kratix-rs events -A                       # in every namespace
  kratix-rs events postgresql acme-db -n team-a
  kratix-rs events promise postgresql -o yaml";

pub(super) const TREE: &str = "\
Examples:
  kratix-rs tree promise postgresql
  kratix-rs tree postgresql acme-db -n team-a
  kratix-rs tree destination worker-1
  kratix-rs tree promise postgresql -o dot | dot -Tsvg > postgresql.svg
  kratix-rs tree postgresql acme-db -n team-a -o mermaid";

pub(super) const WAIT: &str = "\
Examples:
  kratix-rs wait promise postgresql --for condition=Available
  kratix-rs wait postgresql acme-db -n team-a --for condition=Reconciled --timeout 60
  kratix-rs wait destination worker-1 --for delete
  kratix-rs wait postgresql acme-db --for condition=Reconciled -o json";

pub(super) const RECONCILE: &str = "\
Examples:
  kratix-rs reconcile promise postgresql
  kratix-rs reconcile postgresql acme-db -n team-a --no-wait";

pub(super) const LOGS: &str = "\
Examples:
  kratix-rs logs promise postgresql
  kratix-rs logs postgresql acme-db -n team-a --pipeline instance-configure";

pub(super) const LABEL: &str = "\
Examples:
  kratix-rs label destination worker-1 environment=dev
  kratix-rs label destination worker-1 environment=prod --overwrite
  kratix-rs label postgresql acme-db -n team-a kratix.io/paused=true
  kratix-rs label destination worker-1 environment-";

pub(super) const ANNOTATE: &str = "\
Examples:
  kratix-rs annotate postgresql acme-db -n team-a ticket=OPS-42
  kratix-rs annotate promise postgresql owner=platform-team --overwrite
  kratix-rs annotate promise postgresql owner-";

pub(super) const SERVE: &str = "\
Examples:
  kratix-rs serve
  kratix-rs --home /srv/kratix serve --max-parallel 4
  kratix-rs serve --resource-binding-version pinned
  KRATIX_LOG=info kratix-rs serve --metrics-addr 127.0.0.1:8080 --log-format json
  kratix-rs serve --api-addr 127.0.0.1:6443 &  kubectl --kubeconfig .kratix/kubeconfig get promises";

pub(super) const CONTROLLER: &str = "\
Examples:
  kratix-rs crds | kubectl apply -f - && kratix-rs controller
  kratix-rs controller --kubeconfig ~/.kube/config --pipelines local
  kratix-rs controller --leader-elect --metrics-addr 0.0.0.0:8080 --log-format json";

pub(super) const CRDS: &str = "\
Examples:
  kratix-rs crds > crds.yaml
  kratix-rs crds | kubectl apply -f -";

pub(super) const PIPELINE_ADAPTER: &str = "\
Examples (run by a pipeline Job's containers, not by hand):
  kratix-rs pipeline-adapter reader
  kratix-rs pipeline-adapter work-writer
  kratix-rs pipeline-adapter status-writer
  kratix-rs pipeline-adapter hand-back";

pub(super) const COMPLETION: &str = "\
Examples:
  source <(kratix-rs completion bash)
  kratix-rs completion zsh > \"${fpath[1]}/_kratix-rs\"
  kratix-rs completion fish > ~/.config/fish/completions/kratix-rs.fish";
