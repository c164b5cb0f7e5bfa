//! Vectors: up to 256 buffer indices from one rx queue, and the per-worker pool they live in.

/// Most packets a vector holds.
pub const VECTOR_SIZE: usize = 256;

/// A vector of buffer indices. `port` is the interface whose rx queue produced it.
#[derive(Clone)]
#[repr(C, align(64))]
pub struct Vector {
    len: u16,
    /// Interface index of the rx queue the packets came from.
    pub port: u16,
    idx: [u32; VECTOR_SIZE],
}

impl Vector {
    const EMPTY: Vector = Vector { len: 0, port: 0, idx: [0; VECTOR_SIZE] };

    /// Number of packets.
    #[inline(always)]
    pub fn len(&self) -> usize {
        self.len as usize
    }

    /// True when the vector holds no packets.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The buffer indices.
    #[inline(always)]
    pub fn indices(&self) -> &[u32] {
        &self.idx[..self.len as usize]
    }

    /// Appends one index. The caller guarantees room (a split never outgrows its source).
    #[inline(always)]
    pub fn push(&mut self, i: u32) {
        self.idx[self.len as usize] = i;
        self.len += 1;
    }

    /// The whole index array, for a producer that fills it and then calls [`Vector::set_len`].
    pub fn slots_mut(&mut self) -> &mut [u32; VECTOR_SIZE] {
        &mut self.idx
    }

    /// Sets the packet count after filling [`Vector::slots_mut`].
    pub fn set_len(&mut self, n: usize) {
        assert!(n <= VECTOR_SIZE);
        self.len = n as u16;
    }
}

/// Handle of a vector in a [`VectorPool`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VecHandle(pub(crate) u16);

/// A worker's vectors. Enough of them that a depth-first graph walk can never run out:
/// see [`VectorPool::CAPACITY`].
pub struct VectorPool {
    vecs: Vec<Vector>,
    free: Vec<u16>,
}

impl VectorPool {
    /// Vectors per worker. A node frees its input and creates at most one vector per next
    /// node, and the walk is depth-first, so at most `nodes × depth ≤ nodes²` vectors are
    /// live at once; 1024 covers any graph of up to 32 nodes.
    pub const CAPACITY: usize = 1024;

    /// Creates the pool with all vectors free.
    pub fn new() -> Self {
        Self { vecs: vec![Vector::EMPTY; Self::CAPACITY], free: (0..Self::CAPACITY as u16).rev().collect() }
    }

    /// Takes an empty vector for `port`.
    #[inline]
    pub fn alloc(&mut self, port: u16) -> VecHandle {
        let h = self.free.pop().expect("vector pool sized for the graph (see CAPACITY)");
        let v = &mut self.vecs[h as usize];
        v.len = 0;
        v.port = port;
        VecHandle(h)
    }

    /// Returns a vector to the pool.
    #[inline]
    pub fn free(&mut self, h: VecHandle) {
        self.free.push(h.0);
    }

    /// Vectors currently free.
    pub fn free_count(&self) -> usize {
        self.free.len()
    }
}

impl Default for VectorPool {
    fn default() -> Self {
        Self::new()
    }
}

impl std::ops::Index<VecHandle> for VectorPool {
    type Output = Vector;
    #[inline(always)]
    fn index(&self, h: VecHandle) -> &Vector {
        &self.vecs[h.0 as usize]
    }
}

impl std::ops::IndexMut<VecHandle> for VectorPool {
    #[inline(always)]
    fn index_mut(&mut self, h: VecHandle) -> &mut Vector {
        &mut self.vecs[h.0 as usize]
    }
}
