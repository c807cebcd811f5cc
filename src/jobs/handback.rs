//! How the checked output and metadata travel from the pod back to the controller.
//!
//! Kratix's work-writer writes Works itself; here the controllers decide what becomes of a run's
//! output (as with the local executor), so the adapters hand the checked folders back instead:
//! gzip-compressed JSON in ConfigMaps named after the Job. An object holds at most 1 MiB, so the
//! payload is cut into chunks of [`CHUNK_BYTES`]; chunk 0 names the count and the SHA-256 of
//! the whole, and the executor refuses anything that does not add up. ConfigMaps rather than
//! Secrets: the output goes to state stores, which are not secret either. The pipeline's own
//! containers run under the same ServiceAccount and could create these objects first: the
//! adapters only ever `create`, so a planted object makes the run fail instead of replacing its
//! result, and the controller checks everything again before using it.

use std::collections::BTreeMap;
use std::io::{Read as _, Write as _};

use base64::Engine as _;
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use k8s_openapi::ByteString;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// Bytes of payload per ConfigMap: even base64-encoded in JSON, a chunk stays under 1 MiB.
pub(crate) const CHUNK_BYTES: usize = 512 * 1024;
/// The key holding the input object in the input ConfigMap.
pub(crate) const OBJECT_KEY: &str = "object.yaml";
const DATA_KEY: &str = "data";
const CHUNKS_ANNOTATION: &str = "kratix.io/chunks";
const SHA256_ANNOTATION: &str = "kratix.io/sha256";

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("cannot encode the {part} hand-back")]
    Encode {
        part: &'static str,
        #[source]
        source: std::io::Error,
    },
    /// A ConfigMap of the hand-back is missing data or annotations, or they do not add up.
    #[error("the {part} handed back by the pod is damaged: {detail}")]
    Damaged { part: &'static str, detail: String },
    #[error("the {part} handed back by the pod cannot be decoded")]
    Decode {
        part: &'static str,
        #[source]
        source: std::io::Error,
    },
}

/// Which folder a hand-back carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Part {
    /// By the work-writer: the checked output folder.
    Output,
    /// By the status-writer: the metadata files.
    Metadata,
}

impl Part {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Part::Output => "output",
            Part::Metadata => "metadata",
        }
    }
}

/// A folder's files (relative `/`-separated paths and bytes) and sub-folders.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Bundle {
    pub files: Vec<(String, String)>,
    pub dirs: Vec<String>,
}

impl Bundle {
    pub(crate) fn new(files: &[(String, Vec<u8>)], dirs: &[String]) -> Self {
        let b64 = base64::engine::general_purpose::STANDARD;
        Bundle {
            files: files
                .iter()
                .map(|(name, bytes)| (name.clone(), b64.encode(bytes)))
                .collect(),
            dirs: dirs.to_vec(),
        }
    }

    /// The files with their bytes; a name whose content is not base64 is damage.
    pub(crate) fn files(&self, part: Part) -> Result<Vec<(String, Vec<u8>)>, Error> {
        let b64 = base64::engine::general_purpose::STANDARD;
        self.files
            .iter()
            .map(|(name, data)| {
                b64.decode(data)
                    .map(|bytes| (name.clone(), bytes))
                    .map_err(|e| Error::Damaged {
                        part: part.as_str(),
                        detail: format!("file {name:?}: {e}"),
                    })
            })
            .collect()
    }
}

pub(crate) fn input_name(job: &str) -> String {
    format!("{job}-input")
}

pub(crate) fn chunk_name(job: &str, part: Part, index: usize) -> String {
    format!("{job}-{}-{index}", part.as_str())
}

/// The ConfigMap the reader copies `object.yaml` from.
pub(crate) fn input_config_map(
    job: &str,
    namespace: &str,
    labels: &BTreeMap<String, String>,
    object_yaml: &str,
) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(input_name(job)),
            namespace: Some(namespace.into()),
            labels: Some(labels.clone()),
            ..ObjectMeta::default()
        },
        data: Some(BTreeMap::from([(
            OBJECT_KEY.to_string(),
            object_yaml.to_string(),
        )])),
        ..ConfigMap::default()
    }
}

/// The owner reference that lets the garbage collector remove hand-backs with their Job.
pub(crate) fn job_owner(job: &str, uid: &str) -> OwnerReference {
    OwnerReference {
        api_version: "batch/v1".into(),
        kind: "Job".into(),
        name: job.into(),
        uid: uid.into(),
        controller: Some(false),
        block_owner_deletion: None,
    }
}

/// The ConfigMaps carrying `bundle`, chunk 0 first.
pub(crate) fn encode(
    bundle: &Bundle,
    part: Part,
    job: &str,
    namespace: &str,
    owner: Option<OwnerReference>,
    labels: &BTreeMap<String, String>,
) -> Result<Vec<ConfigMap>, Error> {
    let json = serde_json::to_vec(bundle).map_err(|e| Error::Encode {
        part: part.as_str(),
        source: e.into(),
    })?;
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    let packed = gz
        .write_all(&json)
        .and_then(|()| gz.finish())
        .map_err(|source| Error::Encode {
            part: part.as_str(),
            source,
        })?;
    let chunks: Vec<&[u8]> = if packed.is_empty() {
        vec![&[]]
    } else {
        packed.chunks(CHUNK_BYTES).collect()
    };
    let digest = hex::encode(Sha256::digest(&packed));
    let count = chunks.len();
    Ok(chunks
        .into_iter()
        .enumerate()
        .map(|(index, chunk)| {
            let annotations = (index == 0).then(|| {
                BTreeMap::from([
                    (CHUNKS_ANNOTATION.to_string(), count.to_string()),
                    (SHA256_ANNOTATION.to_string(), digest.clone()),
                ])
            });
            ConfigMap {
                metadata: ObjectMeta {
                    name: Some(chunk_name(job, part, index)),
                    namespace: Some(namespace.into()),
                    labels: Some(labels.clone()),
                    annotations,
                    owner_references: owner.clone().map(|o| vec![o]),
                    ..ObjectMeta::default()
                },
                binary_data: Some(BTreeMap::from([(
                    DATA_KEY.to_string(),
                    ByteString(chunk.to_vec()),
                )])),
                ..ConfigMap::default()
            }
        })
        .collect())
}

/// How many chunks chunk 0 announces.
pub(crate) fn chunk_count(first: &ConfigMap, part: Part) -> Result<usize, Error> {
    first
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(CHUNKS_ANNOTATION))
        .and_then(|n| n.parse::<usize>().ok())
        .filter(|n| *n >= 1)
        .ok_or_else(|| Error::Damaged {
            part: part.as_str(),
            detail: format!("chunk 0 has no valid {CHUNKS_ANNOTATION} annotation"),
        })
}

/// The bundle the chunks carry, refusing it unless the count and checksum of chunk 0 match and
/// it unpacks within `max_bytes`.
pub(crate) fn decode(chunks: &[ConfigMap], part: Part, max_bytes: u64) -> Result<Bundle, Error> {
    let damaged = |detail: String| Error::Damaged {
        part: part.as_str(),
        detail,
    };
    let first = chunks.first().ok_or_else(|| damaged("no chunks".into()))?;
    if chunk_count(first, part)? != chunks.len() {
        return Err(damaged(format!(
            "chunk 0 announces {} chunks, {} found",
            chunk_count(first, part)?,
            chunks.len()
        )));
    }
    let want = first
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(SHA256_ANNOTATION))
        .cloned()
        .unwrap_or_default();
    let mut packed = Vec::new();
    for (index, cm) in chunks.iter().enumerate() {
        let data = cm
            .binary_data
            .as_ref()
            .and_then(|d| d.get(DATA_KEY))
            .ok_or_else(|| damaged(format!("chunk {index} has no data")))?;
        packed.extend_from_slice(&data.0);
    }
    if hex::encode(Sha256::digest(&packed)) != want {
        return Err(damaged("checksum does not match".into()));
    }
    let decode_error = |source| Error::Decode {
        part: part.as_str(),
        source,
    };
    // Base64 and JSON add about a third to the files; more than that is not a bundle.
    let cap = max_bytes.saturating_mul(2).saturating_add(1024 * 1024);
    let mut json = Vec::new();
    flate2::read::GzDecoder::new(packed.as_slice())
        .take(cap)
        .read_to_end(&mut json)
        .map_err(decode_error)?;
    if json.len() as u64 >= cap {
        return Err(damaged(format!("it unpacks to more than {cap} bytes")));
    }
    serde_json::from_slice(&json).map_err(|e| decode_error(e.into()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bundle(size: usize) -> Bundle {
        // Incompressible bytes, so the payload really needs several chunks.
        let mut state: u32 = 1;
        let bytes: Vec<u8> = (0..size)
            .map(|_| {
                state = state.wrapping_mul(1_103_515_245).wrapping_add(12345);
                (state >> 16).to_le_bytes()[0]
            })
            .collect();
        Bundle::new(
            &[("a/b.yaml".into(), bytes), ("empty".into(), Vec::new())],
            &["a".into(), "c".into()],
        )
    }

    #[test]
    fn bundles_round_trip_in_as_many_chunks_as_they_need() {
        for (case, size, want_chunks) in [
            ("empty files", 0, 1),
            ("small", 1000, 1),
            ("three chunks", 2 * CHUNK_BYTES, 3),
        ] {
            let b = bundle(size);
            let maps =
                encode(&b, Part::Output, "job", "ns", None, &BTreeMap::new()).expect("encodes");
            assert_eq!(maps.len(), want_chunks, "{case}");
            for cm in &maps {
                let bytes = serde_json::to_vec(cm).expect("serializes").len();
                assert!(bytes < 1024 * 1024, "{case}: a ConfigMap of {bytes} bytes");
            }
            assert_eq!(
                decode(&maps, Part::Output, 64 << 20).expect("decodes"),
                b,
                "{case}"
            );
        }
    }

    #[test]
    fn damaged_hand_backs_are_refused() {
        let maps = encode(
            &bundle(2 * CHUNK_BYTES),
            Part::Output,
            "job",
            "ns",
            None,
            &BTreeMap::new(),
        )
        .expect("encodes");
        let mut swapped = maps.clone();
        swapped.swap(1, 2);
        let mut short = maps.clone();
        short.pop();
        let mut no_count = maps.clone();
        no_count[0].metadata.annotations = None;
        let cases = [
            ("chunks out of order", swapped, "checksum does not match"),
            (
                "a chunk missing",
                short,
                "chunk 0 announces 3 chunks, 2 found",
            ),
            ("no count", no_count, "no valid kratix.io/chunks annotation"),
        ];
        for (case, maps, want) in cases {
            let err = decode(&maps, Part::Output, 64 << 20).expect_err(case);
            assert!(err.to_string().contains(want), "{case}: {err}");
        }
        let err = decode(&maps, Part::Output, 1000).expect_err("too big");
        assert!(err.to_string().contains("unpacks to more than"), "{err}");
    }
}
