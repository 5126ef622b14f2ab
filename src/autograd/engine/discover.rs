//! Discovery: the graph below the roots, numbered depth-first (deterministically), what
//! is needed (pruned to the wanted tensors for grad() and `backward(inputs=...)`), each
//! node's and leaf's dependency count, and the per-call tables that hold them.

use super::{Input, LeafState, NO_BUFFER, NodeState, Options, PackedTarget, Target, Task};
use crate::autograd::graph::{Edge, NodeRef};
use crate::tensor::Tensor;
use crate::{Error, Result};
use parking_lot::Mutex;
use smallvec::SmallVec;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};

/// Keys here are node ids and tensor addresses, already well spread: one multiply
/// instead of SipHash (discovery hashes every node of the graph).
#[derive(Default)]
pub(super) struct IdHasher(u64);
impl Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(b)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }
    fn write_u64(&mut self, x: u64) {
        self.0 = (self.0 ^ x).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
    fn write_usize(&mut self, x: usize) {
        self.write_u64(x as u64);
    }
}
pub(super) type IdMap<K> = HashMap<K, usize, BuildHasherDefault<IdHasher>>;

/// Node -> local index for one backward call, keyed by arena slot: pages of 64 entries
/// (4 bytes each) found through a small map, so a graph's nodes, which sit together in
/// the arena, cost 4 bytes each instead of a hash entry (16 bytes, more while the table
/// grows). Every node of the call stays alive while it runs (its `NodeState` holds it),
/// so a slot names one node.
#[derive(Default)]
pub(super) struct SlotMap {
    pages: HashMap<u32, Box<[u32; SlotMap::PAGE]>, BuildHasherDefault<IdHasher>>,
}

impl SlotMap {
    const PAGE: usize = 64;
    const NONE: u32 = u32::MAX;
    pub(super) fn get(&self, n: &NodeRef) -> Option<usize> {
        let i = n.slot_index() as usize;
        let page = self.pages.get(&((i / Self::PAGE) as u32))?;
        let l = page[i % Self::PAGE];
        (l != Self::NONE).then_some(l as usize)
    }
    fn insert(&mut self, n: &NodeRef, local: usize) {
        let i = n.slot_index() as usize;
        let page = self
            .pages
            .entry((i / Self::PAGE) as u32)
            .or_insert_with(|| Box::new([Self::NONE; Self::PAGE]));
        page[i % Self::PAGE] = local as u32;
    }
}

/// A growable array in chunks of 4096: growing never copies what is there, so a big
/// graph's node table is not held twice while it grows (as a doubling `Vec` would).
pub(super) struct Chunked<T> {
    chunks: Vec<Vec<T>>,
    len: usize,
}

impl<T> Chunked<T> {
    const BITS: u32 = 12;
    fn new() -> Self {
        Chunked {
            chunks: Vec::new(),
            len: 0,
        }
    }
    fn len(&self) -> usize {
        self.len
    }
    fn push(&mut self, v: T) {
        let size = 1usize << Self::BITS;
        match self.chunks.last_mut() {
            Some(c) if c.len() < size => c.push(v),
            _ => {
                // the first chunk grows as a Vec (small graphs stay small), later ones
                // are allocated whole
                let mut c = Vec::with_capacity(if self.chunks.is_empty() { 4 } else { size });
                c.push(v);
                self.chunks.push(c);
            }
        }
        self.len += 1;
    }
    pub(super) fn iter(&self) -> impl Iterator<Item = &T> {
        self.chunks.iter().flatten()
    }
    fn iter_mut(&mut self) -> impl Iterator<Item = &mut T> {
        self.chunks.iter_mut().flatten()
    }
}

impl<T> std::ops::Index<usize> for Chunked<T> {
    type Output = T;
    fn index(&self, i: usize) -> &T {
        &self.chunks[i >> Self::BITS][i & ((1 << Self::BITS) - 1)]
    }
}
impl<T> std::ops::IndexMut<usize> for Chunked<T> {
    fn index_mut(&mut self, i: usize) -> &mut T {
        &mut self.chunks[i >> Self::BITS][i & ((1 << Self::BITS) - 1)]
    }
}

impl Task {
    pub(super) fn discover(roots: &[Edge], inputs: &[Input], opts: Options) -> Result<Task> {
        let mut nodes: Chunked<NodeState> = Chunked::new();
        let mut node_index = SlotMap::default();
        let mut leaves: Vec<LeafState> = Vec::new();
        let mut leaf_index: IdMap<usize> = IdMap::default();

        let mut add_leaf = |t: &Tensor, leaves: &mut Vec<LeafState>| -> usize {
            *leaf_index.entry(t.id()).or_insert_with(|| {
                leaves.push(LeafState {
                    tensor: t.clone(),
                    deps: AtomicU32::new(0),
                    incoming: Mutex::new(SmallVec::new()),
                    needed: false,
                    accumulate: false,
                    capture: None,
                });
                leaves.len() - 1
            })
        };

        // Depth-first discovery; locals are numbered in discovery order (deterministic).
        // A node is locked once, when it is expanded; its edges are read in place.
        let mut stack: Vec<usize> = Vec::new();
        let visit = |n: &NodeRef,
                     node_index: &mut SlotMap,
                     nodes: &mut Chunked<NodeState>,
                     stack: &mut Vec<usize>|
         -> usize {
            if let Some(l) = node_index.get(n) {
                return l;
            }
            nodes.push(NodeState {
                node: n.clone(),
                targets: SmallVec::new(),
                n_outputs: 1,
                deps: AtomicU32::new(0),
                incoming: NO_BUFFER,
                needed: false,
                execute: false,
                captures: false,
                direct: false,
            });
            let local = nodes.len() - 1;
            node_index.insert(n, local);
            stack.push(local);
            local
        };
        for r in roots {
            match r {
                Edge::Node { node, .. } => {
                    visit(node, &mut node_index, &mut nodes, &mut stack);
                }
                Edge::Leaf(t) => {
                    add_leaf(t, &mut leaves);
                }
            }
        }
        while let Some(local) = stack.pop() {
            // (nodes[local] keeps the node alive while `nodes` grows)
            let data = nodes[local].node.lock_unborrowed();
            let mut targets = SmallVec::with_capacity(data.next.len());
            for e in &data.next {
                targets.push(PackedTarget::new(match e {
                    None => None,
                    Some(Edge::Node { node, input_nr }) => {
                        let l = visit(node, &mut node_index, &mut nodes, &mut stack);
                        Some(Target::Node {
                            local: l,
                            input_nr: *input_nr,
                        })
                    }
                    Some(Edge::Leaf(t)) => Some(Target::Leaf(add_leaf(t, &mut leaves))),
                }));
            }
            let st = &mut nodes[local];
            st.n_outputs = data.outputs.len().max(1) as u32;
            st.targets = targets;
        }

        // What is wanted: captures for grad()/backward(inputs=...), else every leaf.
        let mut captured = Vec::new();
        let mut captures = Vec::new();
        let mut forced: Vec<usize> = Vec::new();
        if inputs.is_empty() {
            for l in &mut leaves {
                l.needed = true;
                l.accumulate = true;
            }
        } else {
            for (i, input) in inputs.iter().enumerate() {
                captured.push(Mutex::new(None));
                // where its gradient is caught: an output of a node, or a leaf
                let edge = match input {
                    Input::Edge(e) => e.clone(),
                    Input::Tensor(t) => match t.grad_fn() {
                        Some(node) => Edge::Node {
                            node,
                            input_nr: t.output_nr(),
                        },
                        None => {
                            if !t.requires_grad() {
                                return Err(Error::runtime(
                                    "One of the differentiated Tensors does not require grad",
                                ));
                            }
                            Edge::Leaf(t.leaf_target())
                        }
                    },
                };
                match edge {
                    Edge::Node { node, input_nr } => {
                        if let Some(l) = node_index.get(&node) {
                            captures.push((l, input_nr, i));
                            nodes[l].captures = true;
                            nodes[l].needed = true;
                            if opts.accumulate && matches!(input, Input::Edge(_)) {
                                // backward(inputs=[GradientEdge]): torch runs that node
                                forced.push(l);
                            }
                        }
                    }
                    Edge::Leaf(t) => {
                        if let Some(&l) = leaf_index.get(&t.id()) {
                            leaves[l].needed = true;
                            if opts.accumulate {
                                leaves[l].accumulate = true;
                            } else {
                                leaves[l].capture = Some(i);
                            }
                        }
                    }
                }
            }
        }

        // Topological order (parents before children) by simulated dependency counting,
        // then needed/execute flags children-first.
        let mut indeg = vec![0u32; nodes.len()];
        for n in nodes.iter() {
            for t in n.targets().flatten() {
                if let Target::Node { local, .. } = t {
                    indeg[local] += 1;
                }
            }
        }
        let mut order: Vec<u32> = (0..nodes.len() as u32)
            .filter(|&i| indeg[i as usize] == 0)
            .collect();
        let mut k = 0;
        while k < order.len() {
            let n = order[k] as usize;
            k += 1;
            for t in nodes[n].targets().flatten() {
                if let Target::Node { local, .. } = t {
                    indeg[local] -= 1;
                    if indeg[local] == 0 {
                        order.push(local as u32);
                    }
                }
            }
        }
        for n in order.iter().rev().map(|&n| n as usize) {
            let child_needed = nodes[n].targets().flatten().any(|t| match t {
                Target::Node { local, .. } => nodes[local].needed,
                Target::Leaf(l) => leaves[l].needed,
            });
            nodes[n].execute = child_needed;
            nodes[n].needed |= child_needed;
        }
        for l in forced {
            nodes[l].execute = true;
        }
        // Dependencies: one per edge from a node that will execute (counted, then
        // stored without atomic operations; `indeg`'s buffer reused).
        let mut deps = indeg;
        deps.fill(0);
        let mut leaf_deps = vec![0u32; leaves.len()];
        for n in nodes.iter() {
            if !n.execute {
                continue;
            }
            for t in n.targets().flatten() {
                match t {
                    Target::Node { local, .. } if nodes[local].needed => deps[local] += 1,
                    Target::Leaf(l) if leaves[l].needed => leaf_deps[l] += 1,
                    _ => {}
                }
            }
        }
        for (n, d) in nodes.iter_mut().zip(deps) {
            *n.deps.get_mut() = d;
        }
        for (l, d) in leaves.iter_mut().zip(leaf_deps) {
            *l.deps.get_mut() = d;
        }
        let mut task = Task {
            nodes,
            incoming: Vec::new(),
            leaves,
            node_index,
            leaf_index,
            captured,
            captures,
            opts,
            failed: AtomicBool::new(false),
            error: Mutex::new(None),
            id: 0,
            can_checkpoint: true,
            saved_hooks: None,
            node_hooks: None,
            replay: None,
            callbacks: Mutex::new(Vec::new()),
            batch: None,
            fallbacks: Mutex::new(Vec::new()),
        };
        // Root edges count as one dependency each.
        for r in roots {
            match task.resolve(r) {
                Target::Node { local, .. } => {
                    task.nodes[local].needed = true;
                    task.nodes[local].deps.fetch_add(1, Ordering::Relaxed);
                }
                Target::Leaf(l) => {
                    task.leaves[l].deps.fetch_add(1, Ordering::Relaxed);
                }
            }
        }
        // A node with one dependency gets its gradient directly; one with several, a
        // buffer.
        for n in task.nodes.iter_mut() {
            let deps = *n.deps.get_mut();
            n.direct = deps == 1;
            if n.needed && deps > 1 {
                n.incoming = task.incoming.len() as u32;
                task.incoming.push(Mutex::new(SmallVec::new()));
            }
        }
        Ok(task)
    }
}
