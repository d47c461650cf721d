//! The `caching` allocator of `models/MODEL.md` §2.8, written again from that
//! text (not from `offcert-core`'s allocator): a plain list of blocks in
//! address order, searched in full at every request, and merged by a scan
//! after every free. Quadratic on purpose, like the rest of the re-check.
//!
//! Owns: [`Heap`]. Must not import: `offcert-core`.

const KIB_HALF: u64 = 512;
const MIB: u64 = 1 << 20;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Blk {
    addr: u64,
    size: u64,
    /// Base address of its segment.
    seg: u64,
    small: bool,
    used: bool,
}

/// The caching allocator's segments and blocks.
#[derive(Clone, Debug, Default)]
pub(crate) struct Heap {
    cap: u64,
    /// (base, size) of every segment.
    segs: Vec<(u64, u64)>,
    /// Every block, in address order.
    blocks: Vec<Blk>,
}

impl Heap {
    pub(crate) fn new(cap: u64) -> Heap {
        Heap {
            cap,
            ..Heap::default()
        }
    }

    fn reserved(&self) -> u128 {
        self.segs.iter().map(|s| s.1 as u128).sum()
    }

    /// Serve `r` > 0 bytes: the block's address, or `None` if the allocator
    /// cannot (steps 1–4 of §2.8).
    pub(crate) fn malloc(&mut self, r: u64) -> Option<u64> {
        // 1. round to 512 B, at least 512 B; small iff at most 1 MiB.
        let need = (r as u128).div_ceil(KIB_HALF as u128).max(1) * KIB_HALF as u128;
        let small = need <= MIB as u128;
        // 2. best fit in its pool: least size, then least address.
        let mut best: Option<usize> = None;
        for (k, b) in self.blocks.iter().enumerate() {
            if !b.used && b.small == small && b.size as u128 >= need {
                let better = best.is_none_or(|j| {
                    let c = self.blocks[j];
                    (b.size, b.addr) < (c.size, c.addr)
                });
                if better {
                    best = Some(k);
                }
            }
        }
        let k = match best {
            Some(k) => k,
            None => self.new_segment(need, small)?,
        };
        // 4. split or take the whole block.
        let b = self.blocks[k];
        let need = need as u64;
        let rest = b.size - need;
        let split = if small { rest >= 512 } else { rest > MIB };
        if split {
            self.blocks[k].size = need;
            self.blocks.insert(
                k + 1,
                Blk {
                    addr: b.addr + need,
                    size: rest,
                    ..b
                },
            );
        }
        self.blocks[k].used = true;
        Some(b.addr)
    }

    /// 3. A new segment for a request of `need` bytes, after giving back the
    /// wholly free segments if it does not fit; the index of its block.
    fn new_segment(&mut self, need: u128, small: bool) -> Option<usize> {
        let two = 2 * MIB as u128;
        let size = if small {
            two
        } else if need < 10 * MIB as u128 {
            20 * MIB as u128
        } else {
            need.div_ceil(two) * two
        };
        let cap = self.cap as u128;
        if self.reserved() + size > cap {
            let whole: Vec<u64> = self
                .segs
                .iter()
                .filter(|(base, sz)| {
                    self.blocks
                        .iter()
                        .any(|b| b.addr == *base && b.size == *sz && !b.used)
                })
                .map(|s| s.0)
                .collect();
            self.segs.retain(|s| !whole.contains(&s.0));
            self.blocks.retain(|b| !whole.contains(&b.seg));
            if self.reserved() + size > cap {
                return None;
            }
        }
        let size = size as u64;
        // The lowest address from 2 MiB on where it fits between the segments.
        let mut starts: Vec<u64> = vec![2 * MIB];
        starts.extend(self.segs.iter().map(|(b, s)| b + s));
        starts.sort();
        let base = starts
            .into_iter()
            .find(|&a| self.segs.iter().all(|&(b, s)| a + size <= b || b + s <= a))?;
        self.segs.push((base, size));
        let blk = Blk {
            addr: base,
            size,
            seg: base,
            small,
            used: false,
        };
        let k = self
            .blocks
            .iter()
            .position(|b| b.addr > base)
            .unwrap_or(self.blocks.len());
        self.blocks.insert(k, blk);
        Some(k)
    }

    /// Free the block at `addr`, then merge free neighbours of one segment.
    pub(crate) fn free(&mut self, addr: u64) {
        if let Some(b) = self.blocks.iter_mut().find(|b| b.addr == addr && b.used) {
            b.used = false;
        }
        let mut k = 0;
        while k + 1 < self.blocks.len() {
            let (a, b) = (self.blocks[k], self.blocks[k + 1]);
            if !a.used && !b.used && a.seg == b.seg && a.addr + a.size == b.addr {
                self.blocks[k].size += b.size;
                self.blocks.remove(k + 1);
            } else {
                k += 1;
            }
        }
    }
}
