//! What a session recorded ([`Recording`]): its events in torch's order, kept in the
//! chunks they were written to, and `key_averages` computed from them in torch's units.

use super::{CHUNK_EVENTS, CHUNK_POOL, Config, Event, MemRecord, POOL_CHUNKS, Scope};
use std::borrow::Cow;
use std::collections::HashMap;

/// A session's events, in order (see [`Recording`]).
pub struct Events {
    chunks: Vec<Vec<Event>>,
    order: Vec<(u32, u32)>,
}

impl Events {
    pub(super) fn new(chunks: Vec<Vec<Event>>, order: Vec<(u32, u32)>) -> Events {
        Events { chunks, order }
    }
    pub fn len(&self) -> usize {
        self.order.len()
    }
    pub fn is_empty(&self) -> bool {
        self.order.is_empty()
    }
    pub fn iter(&self) -> impl ExactSizeIterator<Item = &Event> + '_ {
        self.order
            .iter()
            .map(|&(c, i)| &self.chunks[c as usize][i as usize])
    }
}

impl<'a> IntoIterator for &'a Events {
    type Item = &'a Event;
    type IntoIter = Box<dyn ExactSizeIterator<Item = &'a Event> + 'a>;
    fn into_iter(self) -> Self::IntoIter {
        Box::new(self.iter())
    }
}

impl Drop for Events {
    fn drop(&mut self) {
        // emptied chunks go back to the pool for the next session
        let mut pool = CHUNK_POOL.lock();
        // (the copies of partly written chunks are too small to keep)
        for mut chunk in self.chunks.drain(..) {
            if pool.len() >= POOL_CHUNKS {
                break;
            }
            if chunk.capacity() >= CHUNK_EVENTS {
                chunk.clear();
                pool.push(chunk);
            }
        }
    }
}

/// What one session recorded, times in nanoseconds since its start, events ordered by
/// start time (a parent before its children).
pub struct Recording {
    pub config: Config,
    pub events: Events,
    pub memory: Vec<MemRecord>,
}

/// One key's totals (see [`Recording::averages`]), in torch's units: times in float
/// microseconds summed in torch's order, so that they compare equal to what torch's
/// `key_averages` computes from the same events.
#[derive(Clone, Debug, Default)]
pub struct Average {
    pub key: String,
    pub count: u64,
    pub total_us: f64,
    pub self_us: f64,
    pub memory: i64,
    pub self_memory: i64,
    pub flops: u64,
    /// a `record_function` range (part of the key)
    pub user: bool,
    /// the first event's scope
    pub scope: u8,
    /// the first event's input shapes (only when grouped by them)
    pub shapes: Option<Box<[Box<[usize]>]>>,
    /// the first event's parent: (id, name)
    pub parent: Option<(u64, String)>,
}

impl Event {
    /// The name torch reports.
    pub fn full_name(&self) -> Cow<'_, str> {
        if self.evaluate {
            Cow::Owned(format!(
                "autograd::engine::evaluate_function: {}",
                self.name
            ))
        } else {
            Cow::Borrowed(self.name)
        }
    }
}

impl Recording {
    /// Each event's total and self memory: every record inside the event's time range,
    /// on any thread, as torch attributes them; self is less what its children took.
    /// Also says which records fell inside no event (torch's `[memory]` rows).
    pub fn memory_usage(&self) -> (Vec<i64>, Vec<bool>) {
        let mut total = vec![0i64; self.events.len()];
        let mut used = vec![false; self.memory.len()];
        if self.memory.is_empty() {
            return (total, used);
        }
        let mut prefix = Vec::with_capacity(self.memory.len() + 1);
        prefix.push(0i64);
        for m in &self.memory {
            prefix.push(prefix.last().copied().unwrap_or(0) + m.bytes);
        }
        let ats: Vec<u64> = self.memory.iter().map(|m| m.at).collect();
        let mut marks = vec![0i32; self.memory.len() + 1];
        for (i, e) in self.events.iter().enumerate() {
            let lo = ats.partition_point(|&t| t < e.start);
            let hi = ats.partition_point(|&t| t <= e.end);
            total[i] = prefix[hi] - prefix[lo];
            if lo < hi {
                marks[lo] += 1;
                marks[hi] -= 1;
            }
        }
        let mut depth = 0;
        for (u, m) in used.iter_mut().zip(&marks) {
            depth += m;
            *u = depth > 0;
        }
        (total, used)
    }

    /// torch's `key_averages()`: totals per key (the name, whether it is a user range,
    /// and the input shapes when `by_shapes`), keys in the order of their first event.
    /// Memory records that fall inside no event are torch's `[memory]` events.
    pub fn averages(&self, by_shapes: bool) -> Vec<Average> {
        const MEMORY: &str = "[memory]";
        let (memory, used) = self.memory_usage();
        // the events and the [memory] events, in torch's order: by (start, -end), events
        // before memory records on ties (a stable sort of events then records)
        struct Item<'a> {
            name: Cow<'a, str>,
            start_us: f64,
            end_us: f64,
            memory: i64,
            event: Option<&'a Event>,
        }
        let mut items: Vec<Item<'_>> = self
            .events
            .iter()
            .zip(&memory)
            .map(|(e, &m)| Item {
                name: key_name(e.full_name()),
                start_us: e.start as f64 / 1000.0,
                end_us: e.end as f64 / 1000.0,
                memory: m,
                event: Some(e),
            })
            .collect();
        for (m, &u) in self.memory.iter().zip(&used) {
            if !u {
                let at = m.at as f64 / 1000.0;
                items.push(Item {
                    name: Cow::Borrowed(MEMORY),
                    start_us: at,
                    end_us: at,
                    memory: m.bytes,
                    event: None,
                });
            }
        }
        let mut order: Vec<usize> = (0..items.len()).collect();
        order.sort_by(|&a, &b| {
            let (x, y) = (&items[a], &items[b]);
            x.start_us
                .total_cmp(&y.start_us)
                .then(y.end_us.total_cmp(&x.end_us))
        });
        let index: HashMap<u64, usize> = items
            .iter()
            .enumerate()
            .filter_map(|(i, it)| Some((it.event?.id, i)))
            .collect();
        // children's totals, summed in start order
        let mut children_us = vec![0f64; items.len()];
        let mut children_memory = vec![0i64; items.len()];
        for &i in &order {
            if let Some(e) = items[i].event
                && let Some(&p) = index.get(&e.parent)
            {
                children_us[p] += items[i].end_us - items[i].start_us;
                children_memory[p] += items[i].memory;
            }
        }
        let mut out: Vec<Average> = Vec::new();
        type Key<'a> = (&'a str, bool, Option<&'a [Box<[usize]>]>);
        let mut slot: HashMap<Key<'_>, usize> = HashMap::new();
        for &i in &order {
            let it = &items[i];
            let user = it.event.is_some_and(|e| e.scope == Scope::UserScope);
            let shapes = if by_shapes {
                it.event.and_then(Event::shapes)
            } else {
                None
            };
            let k = *slot.entry((&it.name, user, shapes)).or_insert_with(|| {
                let parent = it.event.and_then(|e| {
                    let p = items[*index.get(&e.parent)?].event?;
                    Some((p.id, key_name(p.full_name()).into_owned()))
                });
                out.push(Average {
                    key: it.name.clone().into_owned(),
                    user,
                    scope: it.event.map_or(0, |e| e.scope as u8),
                    shapes: by_shapes.then(|| {
                        shapes
                            .map(|s| s.to_vec().into_boxed_slice())
                            .unwrap_or_default()
                    }),
                    parent,
                    ..Average::default()
                });
                out.len() - 1
            });
            let a = &mut out[k];
            let total = it.end_us - it.start_us;
            a.count += 1;
            a.total_us += total;
            a.self_us += total - children_us[i];
            a.memory += it.memory;
            a.self_memory += it.memory - children_memory[i];
            a.flops += it.event.and_then(Event::flops).unwrap_or(0);
        }
        out
    }
}

/// The name torch groups an event under: `ProfilerStep#3` is `ProfilerStep*`.
fn key_name(name: Cow<'_, str>) -> Cow<'_, str> {
    if name.starts_with("ProfilerStep#") {
        Cow::Borrowed("ProfilerStep*")
    } else {
        name
    }
}
