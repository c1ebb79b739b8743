//! Structure read out of fuzz input: choices, numbers and split points
//! taken from the front of the bytes, the rest left as the stream to parse.
//! Running out of input is never an error: missing bytes read as zero.

/// The bytes of one fuzz input, read from the front.
pub struct Input<'a> {
    data: &'a [u8],
}

impl<'a> Input<'a> {
    pub fn new(data: &'a [u8]) -> Input<'a> {
        Input { data }
    }

    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
    }

    pub fn byte(&mut self) -> u8 {
        match self.data.split_first() {
            Some((&byte, rest)) => {
                self.data = rest;
                byte
            }
            None => 0,
        }
    }

    pub fn bool(&mut self) -> bool {
        self.byte() & 1 == 1
    }

    pub fn u16(&mut self) -> u16 {
        u16::from_le_bytes([self.byte(), self.byte()])
    }

    pub fn u64(&mut self) -> u64 {
        let mut bytes = [0; 8];
        bytes.iter_mut().for_each(|byte| *byte = self.byte());
        u64::from_le_bytes(bytes)
    }

    /// A number in `0..bound` (`bound` > 0).
    pub fn below(&mut self, bound: usize) -> usize {
        usize::from(self.u16()) % bound
    }

    /// Up to `n` bytes.
    pub fn take(&mut self, n: usize) -> &'a [u8] {
        let (taken, rest) = self.data.split_at(n.min(self.data.len()));
        self.data = rest;
        taken
    }

    /// A byte string of up to `max` bytes, its length read first.
    pub fn bytes(&mut self, max: usize) -> &'a [u8] {
        let length = self.below(max + 1);
        self.take(length)
    }

    /// Everything not read yet.
    pub fn rest(self) -> &'a [u8] {
        self.data
    }

    /// Up to 8 cut points, to be applied by [`cut`] to what follows.
    pub fn cuts(&mut self) -> Vec<u16> {
        let count = self.byte() % 9;
        (0..count).map(|_| self.u16()).collect()
    }
}

/// `bytes` cut at the given points (each taken modulo the length + 1), as
/// if the socket reads had cut the stream there; empty pieces included.
pub fn cut<'a>(bytes: &'a [u8], cuts: &[u16]) -> Vec<&'a [u8]> {
    let mut points: Vec<usize> =
        cuts.iter().map(|&point| usize::from(point) % (bytes.len() + 1)).collect();
    points.sort_unstable();
    let mut pieces = Vec::with_capacity(points.len() + 1);
    let mut start = 0;
    for point in points {
        pieces.push(&bytes[start..point]);
        start = point;
    }
    pieces.push(&bytes[start..]);
    pieces
}
