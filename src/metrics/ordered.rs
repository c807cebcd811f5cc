//! A family of metrics, one per label set, that writes its series in label order.
//!
//! `prometheus_client`'s own `Family` keeps its series in a hash map, so two scrapes of the same
//! counts can list them in different orders. Ours come out sorted: a scrape reads the same from
//! one process to the next, and the whole text can be compared with a golden file.

use std::collections::BTreeMap;
use std::sync::{Arc, PoisonError, RwLock};

use prometheus_client::encoding::{EncodeLabelSet, EncodeMetric, MetricEncoder};
use prometheus_client::metrics::{MetricType, TypedMetric};

/// Series of `M` by label set `S`, made by `new` on first use.
#[derive(Debug)]
pub(super) struct Ordered<S, M> {
    series: Arc<RwLock<BTreeMap<S, M>>>,
    new: fn() -> M,
}

/// A clone shares the series: the registry holds one, the recorder another.
impl<S, M> Clone for Ordered<S, M> {
    fn clone(&self) -> Self {
        Self {
            series: self.series.clone(),
            new: self.new,
        }
    }
}

impl<S: Ord + Clone, M: Clone> Ordered<S, M> {
    pub(super) fn new(new: fn() -> M) -> Self {
        Self {
            series: Arc::default(),
            new,
        }
    }

    /// The series of `labels`, made now if it has not been used yet. Metrics share their
    /// value between clones, so the one returned records into the family.
    pub(super) fn get(&self, labels: &S) -> M {
        if let Some(m) = self
            .series
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .get(labels)
        {
            return m.clone();
        }
        self.series
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .entry(labels.clone())
            .or_insert_with(self.new)
            .clone()
    }
}

impl<S: EncodeLabelSet, M: EncodeMetric + TypedMetric> EncodeMetric for Ordered<S, M> {
    fn encode(&self, mut encoder: MetricEncoder) -> Result<(), std::fmt::Error> {
        let series = self.series.read().unwrap_or_else(PoisonError::into_inner);
        for (labels, metric) in series.iter() {
            metric.encode(encoder.encode_family(labels)?)?;
        }
        Ok(())
    }

    fn metric_type(&self) -> MetricType {
        M::TYPE
    }
}

impl<S, M: TypedMetric> TypedMetric for Ordered<S, M> {
    const TYPE: MetricType = M::TYPE;
}
