//! One model of a [`ModelRegistry`](super::ModelRegistry): a built-in model stays in the
//! static catalog until somebody asks for it, so a registry of ~1,000 models costs ~50 KB
//! instead of ~0.7 MB of copies a program mostly never reads.

use std::sync::OnceLock;

use super::catalog::Entry;
use crate::llm::model::Model;

#[derive(Clone)]
pub(super) enum Slot {
    /// A catalog model nothing has changed, copied out on first use.
    Builtin {
        provider: &'static str,
        entry: &'static Entry,
        copy: OnceLock<Box<Model>>,
    },
    /// A custom model, or a built-in one `models.json` or a provider registration changed.
    Owned(Box<Model>),
}

impl Slot {
    pub(super) fn builtin(provider: &'static str, entry: &'static Entry) -> Slot {
        Slot::Builtin {
            provider,
            entry,
            copy: OnceLock::new(),
        }
    }

    pub(super) fn owned(model: Model) -> Slot {
        Slot::Owned(Box::new(model))
    }

    pub(super) fn provider(&self) -> &str {
        match self {
            Slot::Builtin { provider, .. } => provider,
            Slot::Owned(model) => &model.provider,
        }
    }

    pub(super) fn id(&self) -> &str {
        match self {
            Slot::Builtin { entry, .. } => entry.id,
            Slot::Owned(model) => &model.id,
        }
    }

    /// Built-in models take no key only when `models.json` says so, which makes them owned.
    pub(super) fn keyless(&self) -> bool {
        match self {
            Slot::Builtin { .. } => false,
            Slot::Owned(model) => model.keyless,
        }
    }

    pub(super) fn get(&self) -> &Model {
        match self {
            Slot::Builtin {
                provider,
                entry,
                copy,
            } => copy.get_or_init(|| Box::new(entry.to_model(provider))),
            Slot::Owned(model) => model,
        }
    }

    /// The model, to change: a built-in one becomes owned.
    pub(super) fn get_mut(&mut self) -> &mut Model {
        if let Slot::Builtin {
            provider,
            entry,
            copy,
        } = self
        {
            let model = copy
                .take()
                .unwrap_or_else(|| Box::new(entry.to_model(provider)));
            *self = Slot::Owned(model);
        }
        match self {
            Slot::Owned(model) => model,
            Slot::Builtin { .. } => unreachable!("made owned above"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn first_builtin() -> Slot {
        let (provider, entry) = super::super::catalog::entries().next().unwrap();
        Slot::builtin(provider, entry)
    }

    #[test]
    fn a_builtin_slot_is_small_and_copies_its_model_once() {
        // The point of the slot: a fraction of a `Model` until the model is read.
        assert!(std::mem::size_of::<Slot>() * 8 <= std::mem::size_of::<Model>());
        let slot = first_builtin();
        assert!(matches!(&slot, Slot::Builtin { copy, .. } if copy.get().is_none()));
        let (provider, id) = (slot.provider().to_owned(), slot.id().to_owned());
        let first: *const Model = slot.get();
        assert!(std::ptr::eq(first, slot.get()));
        assert_eq!(
            (slot.get().provider.as_str(), slot.get().id.as_str()),
            (&*provider, &*id)
        );
    }

    #[test]
    fn changing_a_builtin_makes_it_owned_and_keeps_the_change() {
        let mut slot = first_builtin();
        let _ = slot.get();
        slot.get_mut().max_tokens = 7;
        assert!(matches!(slot, Slot::Owned(_)));
        assert_eq!(slot.get().max_tokens, 7);
        let mut fresh = first_builtin();
        fresh.get_mut().name = "renamed".into();
        assert_eq!(fresh.get().name, "renamed");
        assert!(!fresh.keyless());
    }
}
