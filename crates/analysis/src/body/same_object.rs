//! Drops a same-object declaration covers (crates/invariants): where the
//! callee's last-reference expectation comes only from a back pointer that
//! names an object kept alive here, it does not apply.
//!
//! The declaration says which variable's drops, which field (a back
//! pointer such as `Node.owner`) and which other variable refers to the
//! same object. The analysis checks the rest:
//!
//! * the callee's expectation is about what its first argument holds or
//!   points to, and its last-reference place (`Summary::last_place`,
//!   followed through pointers) reaches the declared field: the
//!   expectation arises only if the reference in that field is the last
//!   one, or from what that reference's object drops when it is;
//! * the other variable keeps the object alive at the drop: a
//!   shared-reference argument (what it borrows outlives the call), or a
//!   local given one value by a sharing clone that nothing may have moved,
//!   dropped or replaced since.
//!
//! So a drop whose expectation comes from anywhere else (another field, a
//! teardown that is not the object's) is left as it was.

use std::collections::BTreeSet;

use invariants::same_object::{Alive, Site};
use kmir::{BlockId, TerminatorKind};

use super::BodyAnalysis;
use crate::summary::{PlaceStep, Summary};

impl BodyAnalysis<'_> {
    /// Whether a same-object declaration discharges the last-reference
    /// expectation of the site at `block`.
    pub(super) fn same_object_discharges(
        &self,
        block: BlockId,
        terminator: &TerminatorKind,
        summary: &Summary,
    ) -> bool {
        let sites: Vec<&Site> = self
            .same_objects
            .iter()
            .filter(|(b, _)| *b == block)
            .map(|(_, s)| s)
            .collect();
        if sites.is_empty()
            || !matches!(
                terminator,
                TerminatorKind::Drop { .. } | TerminatorKind::Call { .. }
            )
        {
            return false;
        }
        if summary.last_from.as_deref() != Some(&[0][..]) && summary.last_place.is_none() {
            return false;
        }
        let place = super::run::callee_last_place(summary);
        if self.trace {
            eprintln!(
                "[kanalyze trace] bb{block} same-object declarations: callee place {} {:?}",
                place.describe(),
                place.labels
            );
        }
        sites.iter().any(|s| {
            let Some(j) = place.labels.iter().position(|l| *l == s.field) else {
                return false;
            };
            // After the field: nothing (the reference in it is dropped), or
            // the fields of the handle stored there and then its pointer
            // (what the reference's object drops when it is the last).
            let rest = place.steps.get(j + 1..).unwrap_or(&[]);
            let through_handle = rest.is_empty()
                || rest
                    .iter()
                    .position(|s| !matches!(s, PlaceStep::Field(_)))
                    .is_some_and(|k| rest[k] == PlaceStep::Deref);
            matches!(place.steps.get(j), Some(PlaceStep::Field(_)))
                && through_handle
                && self.keeps_alive(s.alive, block)
        })
    }

    fn keeps_alive(&self, alive: Alive, block: BlockId) -> bool {
        match alive {
            Alive::SharedArg => true,
            Alive::Local(l) => {
                let cloned = self.body.blocks.iter().enumerate().any(|(b, blk)| {
                    matches!(&blk.terminator.kind,
                        TerminatorKind::Call { destination, .. }
                            if destination.local == l && destination.projection.is_empty())
                        && self.sites.get(&(b as BlockId)).is_some_and(|ts| {
                            !ts.is_empty()
                                && ts
                                    .iter()
                                    .all(|t| self.summary_of.get(t.callee).sharing_clone)
                        })
                });
                let reach = super::origins::kill_reach(
                    self.body,
                    &BTreeSet::from([l]),
                    false,
                    &BTreeSet::new(),
                );
                cloned
                    && reach
                        .get(&l)
                        .is_some_and(|r| r.get(block as usize).is_some_and(|reached| !reached))
            }
        }
    }
}
