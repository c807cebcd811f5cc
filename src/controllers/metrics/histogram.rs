//! A Prometheus histogram: cumulative counts per upper bound, a sum and a count.

/// Observations counted per bucket (each bucket counts the values at or below its bound).
#[derive(Debug, Clone, PartialEq)]
pub struct Histogram {
    bounds: &'static [f64],
    /// One count per bound, not yet cumulative.
    counts: Vec<u64>,
    sum: f64,
    count: u64,
}

/// Seconds, for pipeline runs and the latency from a pipeline's end to its commit.
pub const SECONDS: &[f64] = &[
    0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0,
];

/// Small counts, for commits per push.
pub const COUNTS: &[f64] = &[1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0];

impl Histogram {
    pub fn new(bounds: &'static [f64]) -> Self {
        Self {
            bounds,
            counts: vec![0; bounds.len()],
            sum: 0.0,
            count: 0,
        }
    }

    pub fn observe(&mut self, value: f64) {
        if let Some(i) = self.bounds.iter().position(|b| value <= *b) {
            self.counts[i] += 1;
        }
        self.sum += value;
        self.count += 1;
    }

    pub fn count(&self) -> u64 {
        self.count
    }

    /// The sample lines of the histogram `name` with `labels` (`key="value"` pairs, joined by
    /// commas; empty for none).
    pub fn render(&self, name: &str, labels: &str, out: &mut String) {
        let sep = if labels.is_empty() { "" } else { "," };
        let mut cumulative = 0;
        for (bound, n) in self.bounds.iter().zip(&self.counts) {
            cumulative += n;
            out.push_str(&format!(
                "{name}_bucket{{{labels}{sep}le=\"{bound}\"}} {cumulative}\n"
            ));
        }
        out.push_str(&format!(
            "{name}_bucket{{{labels}{sep}le=\"+Inf\"}} {}\n",
            self.count
        ));
        let braces = |s: &str| {
            if s.is_empty() {
                String::new()
            } else {
                format!("{{{s}}}")
            }
        };
        out.push_str(&format!("{name}_sum{} {}\n", braces(labels), self.sum));
        out.push_str(&format!("{name}_count{} {}\n", braces(labels), self.count));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_cumulative_and_infinity_counts_everything() {
        let cases: [(&[f64], &str, &str); 3] = [
            (
                &[],
                "",
                "h_bucket{le=\"1\"} 0\nh_bucket{le=\"2\"} 0\nh_bucket{le=\"4\"} 0\n\
                 h_bucket{le=\"+Inf\"} 0\nh_sum 0\nh_count 0\n",
            ),
            (
                &[0.5, 2.0, 2.0, 9.0],
                "",
                "h_bucket{le=\"1\"} 1\nh_bucket{le=\"2\"} 3\nh_bucket{le=\"4\"} 3\n\
                 h_bucket{le=\"+Inf\"} 4\nh_sum 13.5\nh_count 4\n",
            ),
            (
                &[4.0],
                "result=\"ok\"",
                "h_bucket{result=\"ok\",le=\"1\"} 0\nh_bucket{result=\"ok\",le=\"2\"} 0\n\
                 h_bucket{result=\"ok\",le=\"4\"} 1\nh_bucket{result=\"ok\",le=\"+Inf\"} 1\n\
                 h_sum{result=\"ok\"} 4\nh_count{result=\"ok\"} 1\n",
            ),
        ];
        for (values, labels, want) in cases {
            let mut h = Histogram::new(&[1.0, 2.0, 4.0]);
            values.iter().for_each(|v| h.observe(*v));
            let mut out = String::new();
            h.render("h", labels, &mut out);
            assert_eq!(out, want, "{values:?}");
            assert_eq!(h.count(), values.len() as u64);
        }
    }
}
