//! What each exact method accepts, as data: the model features it encodes
//! itself, and the reductions it is run through for the others.
//!
//! Owns: [`Feature`], [`Features`] (an instance's, derived once by
//! [`Features::of`]), [`Reduction`], [`Scope`] and [`Route`], and the one
//! comparison of an instance's features with a scope ([`Scope::admit`]), which
//! refuses with [`ExactError::Unencoded`] naming the first feature outside it.
//! Each method declares its `SCOPE` next to its solver; the door
//! (`exact::solve`) reads it. A later change widens a method by adding a
//! feature to its `SCOPE` (and the encoding), or a reduction to its list,
//! without touching the door.
//!
//! The scope is coarse on purpose: the features that decide *which* route an
//! instance takes. Finer structural limits (an op twice in a fixed order, a
//! moving per-iteration tensor in a cyclic search, a chain outside the
//! `remat_chain` layout) stay with the encoding that has them, and are refused
//! there with [`ExactError::Unsupported`].
//!
//! Must not import: the methods, the reductions' code, the cross-check.

use super::{ExactError, Method};
use crate::model::{ComputeOrder, Device, Extension, Instance, Mode};

/// A model feature an instance may use, as the exact methods see it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Feature {
    /// A core-model extension: variant groups, slots, precedences (`after`).
    Extension(Extension),
    /// A free compute order (`remat_chain`: ops run any number of times).
    FreeOrder,
    /// A cyclic schedule (one period of a steady state).
    Cyclic,
    /// Ops that run on the CPU.
    CpuOps,
    /// A CPU memory capacity.
    CpuCapacity,
    /// An allocator other than `exact` (`models/MODEL.md` §2.8): no method
    /// encodes one; judge an `exact` optimum under it with `check` instead.
    Allocator,
}

impl From<Extension> for Feature {
    fn from(e: Extension) -> Feature {
        Feature::Extension(e)
    }
}

impl std::fmt::Display for Feature {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Feature::Extension(e) => e.fmt(f),
            Feature::FreeOrder => f.write_str("a free compute order"),
            Feature::Cyclic => f.write_str("a cyclic schedule"),
            Feature::CpuOps => f.write_str("ops on the CPU"),
            Feature::CpuCapacity => f.write_str("a CPU memory capacity"),
            Feature::Allocator => f.write_str("an allocator other than exact"),
        }
    }
}

/// The features an instance uses, in the order refusals name them (the
/// extensions first, in the order of `Instance::extensions`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Features(Vec<Feature>);

impl Features {
    /// The features `inst` uses: derived here, once, for every method.
    pub fn of(inst: &Instance) -> Features {
        let mut used: Vec<Feature> = inst.extensions().into_iter().map(Feature::from).collect();
        if matches!(inst.order, ComputeOrder::Free) {
            used.push(Feature::FreeOrder);
        }
        if inst.mode == Mode::Cyclic {
            used.push(Feature::Cyclic);
        }
        if inst.ops.iter().any(|o| o.device != Device::Gpu) {
            used.push(Feature::CpuOps);
        }
        if inst.machine.cpu_capacity.is_some() {
            used.push(Feature::CpuCapacity);
        }
        if !inst.allocator.is_default() {
            used.push(Feature::Allocator);
        }
        Features(used)
    }

    /// A set given by its members (tests, and scopes built at run time).
    pub fn from_list(list: &[Feature]) -> Features {
        Features(list.to_vec())
    }

    pub fn contains(&self, f: Feature) -> bool {
        self.0.contains(&f)
    }

    pub fn iter(&self) -> impl Iterator<Item = Feature> + '_ {
        self.0.iter().copied()
    }

    /// `Ok` when every feature of this set is in `allowed`; else the refusal
    /// naming the first one that is not.
    pub fn within(&self, allowed: &[Feature], method: Method) -> Result<(), ExactError> {
        match self.iter().find(|f| !allowed.contains(f)) {
            Some(feature) => Err(ExactError::Unencoded { method, feature }),
            None => Ok(()),
        }
    }
}

/// A reduction the door applies before a method's plain solver: it removes
/// one feature by turning the instance into instances without it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Reduction {
    /// A free-order `remat_chain` reduced to fixed op sequences, each solved
    /// by the method's plain solver (`exact/remat`, `proofs/REMAT-EXACT.md`).
    Remat,
}

impl Reduction {
    /// The feature the reduction removes.
    pub const fn removes(self) -> Feature {
        match self {
            Reduction::Remat => Feature::FreeOrder,
        }
    }

    /// Every feature an instance may use for the reduction to apply (the one
    /// it removes included). Its finer limits (the chain's layout, the release
    /// rule, ops of positive duration) are its own: `remat::scope`.
    pub const fn accepts(self) -> &'static [Feature] {
        match self {
            // Several options per block compile to variant groups `bwd{ℓ}`;
            // the sequences choose each block's option (`remat::sequences`).
            Reduction::Remat => &[Feature::FreeOrder, Feature::Extension(Extension::Groups)],
        }
    }
}

/// How the door runs a method on an instance.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Route {
    /// The method's plain solver, on the instance itself.
    Direct,
    /// The reduction, with the method's plain solver on each instance it makes.
    Through(Reduction),
}

/// What one method accepts.
#[derive(Clone, Copy, Debug)]
pub struct Scope {
    /// The features the method's plain solver encodes.
    pub encodes: &'static [Feature],
    /// The reductions the method is run through, for the features its plain
    /// solver does not encode (at most one applies to an instance).
    pub reductions: &'static [Reduction],
}

impl Scope {
    /// The route for an instance that uses `used`, or the refusal naming the
    /// first feature that neither the method nor a reduction of it encodes.
    pub fn admit(&self, method: Method, used: &Features) -> Result<Route, ExactError> {
        for &r in self.reductions {
            if used.contains(r.removes()) {
                used.within(r.accepts(), method)?;
                // What is left for the plain solver on each reduced instance.
                let mut left = self.encodes.to_vec();
                left.push(r.removes());
                used.within(&left, method)?;
                return Ok(Route::Through(r));
            }
        }
        used.within(self.encodes, method)?;
        Ok(Route::Direct)
    }

    /// `Ok` when the plain solver encodes every feature of `inst` itself: the
    /// guard of a method's entry points that the door does not route
    /// (refutations, model exports, the anytime search).
    pub fn direct(&self, method: Method, inst: &Instance) -> Result<(), ExactError> {
        Features::of(inst).within(self.encodes, method)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const WITH_REMAT: Scope = Scope {
        encodes: &[Feature::Cyclic],
        reductions: &[Reduction::Remat],
    };

    #[test]
    fn refusals_name_the_first_feature_outside_the_scope() {
        let all = Features::from_list(&[
            Feature::Extension(Extension::Groups),
            Feature::Extension(Extension::Slots),
            Feature::Extension(Extension::After),
            Feature::FreeOrder,
            Feature::Cyclic,
            Feature::CpuOps,
            Feature::CpuCapacity,
        ]);
        // The reduction takes variant groups (several options per block),
        // not slots: the first feature outside is the slotted order.
        let e = WITH_REMAT.admit(Method::Milp, &all).unwrap_err();
        assert!(matches!(
            e,
            ExactError::Unencoded {
                method: Method::Milp,
                feature: Feature::Extension(Extension::Slots)
            }
        ));
        // A cyclic free-order instance: the reduction takes one-shot only.
        let used = Features::from_list(&[Feature::FreeOrder, Feature::Cyclic]);
        let e = WITH_REMAT.admit(Method::Search, &used).unwrap_err();
        assert!(matches!(
            e,
            ExactError::Unencoded {
                feature: Feature::Cyclic,
                ..
            }
        ));
        assert_eq!(
            e.to_string(),
            "Search: this instance uses a cyclic schedule, which the method does not encode"
        );
    }

    #[test]
    fn routes_follow_the_data() {
        let free = Features::from_list(&[Feature::FreeOrder]);
        assert_eq!(
            WITH_REMAT.admit(Method::Milp, &free).unwrap(),
            Route::Through(Reduction::Remat)
        );
        let cyclic = Features::from_list(&[Feature::Cyclic]);
        assert_eq!(
            WITH_REMAT.admit(Method::Milp, &cyclic).unwrap(),
            Route::Direct
        );
        let no_reduction = Scope {
            reductions: &[],
            ..WITH_REMAT
        };
        assert!(matches!(
            no_reduction.admit(Method::Smt, &free),
            Err(ExactError::Unencoded {
                feature: Feature::FreeOrder,
                ..
            })
        ));
        // Widening is data: a scope that encodes the free order runs it directly.
        let wide = Scope {
            encodes: &[Feature::Cyclic, Feature::FreeOrder],
            reductions: &[],
        };
        assert_eq!(wide.admit(Method::Smt, &free).unwrap(), Route::Direct);
    }
}
