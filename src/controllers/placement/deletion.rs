//! Whether a placement being deleted can go without asking its state store: a placement that
//! never managed to write (its store unreachable, refusing it, or its files invalid) must not
//! wait for a store that may never answer. Kratix fixed the same deadlock for mode `none`, whose
//! clean-up needs the `.kratix` index that only a first write makes
//! (https://github.com/syntasso/kratix/pull/887); here it holds in every mode.

use crate::api::FilepathMode;

/// What the decision reads, observed by the placement controller.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Seen {
    /// Its status owns no path, not even one about to be written.
    pub(super) owns_nothing: bool,
    /// A write of it succeeded once (its status records the files written).
    pub(super) ever_written: bool,
    pub(super) mode: FilepathMode,
    /// Mode `aggregatedYAML`: another placement on the Destination wrote the shared file, which
    /// holds every live placement's content, this one's too.
    pub(super) shared_file_written: bool,
    /// Its state store is `Ready`.
    pub(super) store_ready: bool,
    /// Its last write failed (`WriteSucceeded=False`): nothing of it landed.
    pub(super) last_write_failed: bool,
}

/// The placement's finalizer can go now, without the store.
pub(super) fn goes_without_store(seen: Seen) -> bool {
    let aggregated = seen.mode == FilepathMode::AggregatedYaml;
    if seen.owns_nothing && !aggregated {
        return true;
    }
    if seen.ever_written || (aggregated && seen.shared_file_written) {
        return false;
    }
    // Its paths were claimed before any write (as a placement is made, or as a write began),
    // and no write landed: a store that does not answer now, or that failed the last write,
    // holds nothing of it. A ready store is asked, in case a write landed unrecorded (a crash).
    !seen.store_ready || seen.last_write_failed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_placement_that_never_wrote_goes_without_its_store() {
        let never = Seen {
            owns_nothing: false,
            ever_written: false,
            mode: FilepathMode::NestedByMetadata,
            shared_file_written: false,
            store_ready: false,
            last_write_failed: true,
        };
        let cases = [
            ("never written, store down", never, true),
            (
                "never written, store up, last write failed",
                Seen {
                    store_ready: true,
                    ..never
                },
                true,
            ),
            (
                "never written, store down, no write tried yet",
                Seen {
                    last_write_failed: false,
                    ..never
                },
                true,
            ),
            (
                "never written, store up, no write tried yet: the store is asked",
                Seen {
                    store_ready: true,
                    last_write_failed: false,
                    ..never
                },
                false,
            ),
            (
                "written once: its files are cleaned up",
                Seen {
                    ever_written: true,
                    ..never
                },
                false,
            ),
            (
                "owns nothing",
                Seen {
                    owns_nothing: true,
                    ever_written: true,
                    store_ready: true,
                    last_write_failed: false,
                    ..never
                },
                true,
            ),
            (
                "mode none, never written (no .kratix index)",
                Seen {
                    mode: FilepathMode::None,
                    ..never
                },
                true,
            ),
            (
                "aggregatedYAML, nothing written to the shared file",
                Seen {
                    mode: FilepathMode::AggregatedYaml,
                    owns_nothing: true,
                    ..never
                },
                true,
            ),
            (
                "aggregatedYAML, the shared file holds its content",
                Seen {
                    mode: FilepathMode::AggregatedYaml,
                    owns_nothing: true,
                    shared_file_written: true,
                    ..never
                },
                false,
            ),
        ];
        for (name, seen, want) in cases {
            assert_eq!(goes_without_store(seen), want, "{name}");
        }
    }
}
