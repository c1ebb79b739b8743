//! A seeded Poisson process of rate 1 whose k-th arrival can be found
//! without the k before it, so that threads and shards each take their
//! own arrivals (k = i, i + T, ...) of one global process, and the number
//! of arrivals before any time is counted exactly in a few microseconds
//! however many there are.
//!
//! The arrivals are laid out as a binary tree over their indices (2^62 of
//! them). A node holds the total of its arrivals' gaps: a Gamma of shape
//! its size. It splits into its two halves by a Beta(m, m) share of that
//! total (m the half's size), which is how the sums of two halves of
//! independent exponential gaps divide their total. A leaf of 64 arrivals
//! divides its total among its gaps in proportion to 64 exponentials.
//! Every split and every leaf draws its numbers from the seed and its own
//! position ([`Draws::at`]), so the whole process is a pure function of the
//! seed. Finding arrival k walks down 56 levels; a cursor that moves
//! forward reuses the path and pays about one level per leaf.

use super::random::Draws;

/// Arrivals are indexed below 2^LEVELS.
const LEVELS: u32 = 62;
/// Leaves hold 2^LEAF_BITS arrivals.
const LEAF_BITS: u32 = 6;
const LEAF_SIZE: usize = 1 << LEAF_BITS;
const LEAF_LEVEL: u32 = LEVELS - LEAF_BITS;
/// The position of the leaves' draws (the splits use their level, 0..62).
const LEAF_DRAWS: u64 = 1 << 32;
/// The position of the root's total.
const ROOT_DRAWS: u64 = 1 << 33;

/// One node of the tree: arrivals `index·size .. (index+1)·size` of its
/// level, starting after `start` (unit time) and spanning `total`.
#[derive(Clone, Copy, Debug)]
struct Node {
    level: u32,
    index: u64,
    start: f64,
    total: f64,
}

impl Node {
    fn size_bits(&self) -> u32 {
        LEVELS - self.level
    }

    /// The two halves of the node.
    fn children(&self, seed: u64) -> (Node, Node) {
        let half = (1u64 << (self.size_bits() - 1)) as f64;
        let share = Draws::at(seed, u64::from(self.level), self.index).symmetric_beta(half);
        let left_total = self.total * share;
        let level = self.level + 1;
        let left = Node { level, index: 2 * self.index, start: self.start, total: left_total };
        let right = Node {
            level,
            index: 2 * self.index + 1,
            start: self.start + left_total,
            total: self.total - left_total,
        };
        (left, right)
    }

    /// The arrival times of a leaf, in order.
    fn arrivals(&self, seed: u64) -> [f64; LEAF_SIZE] {
        debug_assert_eq!(self.level, LEAF_LEVEL);
        let mut draws = Draws::at(seed, LEAF_DRAWS, self.index);
        let mut gaps = [0.0; LEAF_SIZE];
        for gap in &mut gaps {
            *gap = draws.exponential();
        }
        let scale = self.total / gaps.iter().sum::<f64>();
        let mut time = self.start;
        for gap in &mut gaps {
            time += *gap * scale;
            *gap = time;
        }
        gaps
    }
}

/// The process for one seed.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PoissonProcess {
    seed: u64,
    /// The sum of all 2^62 gaps: a Gamma(2^62), normal to far below
    /// f64's resolution.
    root_total: f64,
}

impl PoissonProcess {
    pub fn new(seed: u64) -> PoissonProcess {
        let size = (1u64 << LEVELS) as f64;
        let root_total = size + size.sqrt() * Draws::at(seed, ROOT_DRAWS, 0).normal();
        PoissonProcess { seed, root_total }
    }

    fn root(&self) -> Node {
        Node { level: 0, index: 0, start: 0.0, total: self.root_total }
    }

    /// The time of arrival `k` (0 is the first, after one exponential
    /// gap).
    pub fn arrival(&self, k: u64) -> f64 {
        let mut cursor = Cursor::new(*self);
        cursor.seek(k);
        cursor.arrival(k)
    }

    /// How many arrivals come before `time`.
    pub fn count_before(&self, time: f64) -> u64 {
        if time <= 0.0 {
            return 0;
        }
        let mut node = self.root();
        while node.level < LEAF_LEVEL {
            let (left, right) = node.children(self.seed);
            node = if time <= right.start { left } else { right };
        }
        let before = node.arrivals(self.seed).iter().filter(|&&t| t < time).count();
        (node.index << LEAF_BITS) + before as u64
    }
}

/// Reads arrivals in increasing order of index, cheaply.
#[derive(Clone, Debug)]
pub struct Cursor {
    process: PoissonProcess,
    /// The nodes from the root down to the current leaf.
    path: Vec<Node>,
    leaf: [f64; LEAF_SIZE],
}

impl Cursor {
    pub fn new(process: PoissonProcess) -> Cursor {
        let mut cursor = Cursor { process, path: Vec::new(), leaf: [0.0; LEAF_SIZE] };
        cursor.seek(0);
        cursor
    }

    fn leaf_index(&self) -> u64 {
        self.path.last().map_or(u64::MAX, |leaf| leaf.index)
    }

    /// Walks down to the leaf holding arrival `k`.
    fn seek(&mut self, k: u64) {
        let leaf = k >> LEAF_BITS;
        self.path.clear();
        let mut node = self.process.root();
        self.path.push(node);
        while node.level < LEAF_LEVEL {
            let (left, right) = node.children(self.process.seed);
            let bit = LEAF_LEVEL - node.level - 1;
            node = if (leaf >> bit) & 1 == 0 { left } else { right };
            self.path.push(node);
        }
        self.leaf = node.arrivals(self.process.seed);
    }

    /// Moves to the next leaf: up to the nearest left child, over to its
    /// right sibling, down its left edge.
    fn next_leaf(&mut self) {
        while self.path.last().is_some_and(|node| node.index % 2 == 1) {
            self.path.pop();
        }
        let (Some(left), Some(&parent)) = (self.path.pop(), self.path.last()) else {
            // Past the last of 2^62 arrivals: cannot happen in a run.
            return self.seek(0);
        };
        let mut node = Node {
            level: left.level,
            index: left.index + 1,
            start: left.start + left.total,
            total: parent.total - left.total,
        };
        self.path.push(node);
        while node.level < LEAF_LEVEL {
            node = node.children(self.process.seed).0;
            self.path.push(node);
        }
        self.leaf = node.arrivals(self.process.seed);
    }

    /// The time of arrival `k`; cheap when `k` is at or a little after the
    /// arrivals read before.
    pub fn arrival(&mut self, k: u64) -> f64 {
        let leaf = k >> LEAF_BITS;
        let current = self.leaf_index();
        if leaf != current {
            if leaf > current && leaf - current <= 8 {
                for _ in current..leaf {
                    self.next_leaf();
                }
            } else {
                self.seek(k);
            }
        }
        self.leaf[(k as usize) & (LEAF_SIZE - 1)]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arrivals_are_the_same_however_they_are_reached() {
        let process = PoissonProcess::new(42);
        let mut cursor = Cursor::new(process);
        let sequential: Vec<f64> = (0..2_000).map(|k| cursor.arrival(k)).collect();
        assert!(sequential.windows(2).all(|w| w[0] < w[1]), "arrivals increase");
        assert!(sequential[0] > 0.0);
        for k in [0, 1, 63, 64, 65, 1_000, 1_999] {
            assert_eq!(process.arrival(k), sequential[k as usize], "arrival {k}");
        }
        // Striding from another start reads the same values.
        let mut striding = Cursor::new(process);
        for k in (5..2_000).step_by(7) {
            assert_eq!(striding.arrival(k), sequential[k as usize]);
        }
        // A new process from the same seed is the same process.
        assert_eq!(PoissonProcess::new(42).arrival(1_234), sequential[1_234]);
        assert_ne!(PoissonProcess::new(43).arrival(1_234), sequential[1_234]);
    }

    #[test]
    fn gaps_are_exponential_with_mean_one() {
        let mut cursor = Cursor::new(PoissonProcess::new(7));
        let n = 200_000u64;
        let mut gaps: Vec<f64> = Vec::with_capacity(n as usize);
        let mut last = 0.0;
        for k in 0..n {
            let t = cursor.arrival(k);
            gaps.push(t - last);
            last = t;
        }
        let mean = gaps.iter().sum::<f64>() / n as f64;
        let variance = gaps.iter().map(|g| (g - mean).powi(2)).sum::<f64>() / n as f64;
        assert!((mean - 1.0).abs() < 0.01, "mean gap {mean}");
        // An exponential's variance is its mean squared (dispersion 1).
        assert!((variance - 1.0).abs() < 0.03, "variance {variance}");
        gaps.sort_by(f64::total_cmp);
        // Median ln 2 of the mean; a fifth of the mean or less: 1 - e^-0.2.
        let median = gaps[gaps.len() / 2];
        assert!((median - std::f64::consts::LN_2).abs() < 0.01, "median gap {median}");
        let short = gaps.iter().filter(|&&g| g < 0.2).count() as f64 / n as f64;
        assert!((short - (1.0 - (-0.2f64).exp())).abs() < 0.005, "{short}");
    }

    #[test]
    fn counts_before_a_time_match_the_arrivals() {
        let process = PoissonProcess::new(99);
        let mut cursor = Cursor::new(process);
        let arrivals: Vec<f64> = (0..5_000).map(|k| cursor.arrival(k)).collect();
        assert_eq!(process.count_before(0.0), 0);
        for k in [0usize, 1, 63, 64, 100, 4_000] {
            let t = arrivals[k];
            assert_eq!(process.count_before(t), k as u64, "before arrival {k}");
            assert_eq!(process.count_before(t + 1e-9), k as u64 + 1, "just after arrival {k}");
        }
        // Far away, counts are close to the time (rate 1) and exact: the
        // arrival they stop at is where they say.
        let far = 3.6e12;
        let count = process.count_before(far);
        assert!((count as f64 - far).abs() < 10.0 * far.sqrt(), "{count}");
        assert!(process.arrival(count - 1) < far && process.arrival(count) >= far);
    }
}
