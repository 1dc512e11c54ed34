//! Models and thinking levels of an agent session: switching, cycling, clamping (pi's
//! `setModel`, `cycleModel`, `setThinkingLevel`, `cycleThinkingLevel`).

use super::compaction::estimate;
use super::error::AgentSessionError;
use super::event::{CompactionReason, SessionEvent};
use super::session::{AgentSession, ScopedModel};
use super::settings::{DEFAULT_THINKING_LEVEL, SettingsChange};
use crate::extensions::{ModelSelectEvent, ModelSelectSource, ThinkingLevelSelectEvent};
use crate::llm::model::Model;
use crate::llm::thinking::{ThinkingLevel, clamp_thinking_level, supported_thinking_levels};
use crate::session::compaction::should_compact;

/// Which way [`AgentSession::cycle_model`] goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum CycleDirection {
    /// To the next model.
    #[default]
    Forward,
    /// To the previous model.
    Backward,
}

/// Where [`AgentSession::cycle_model`] went.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ModelCycle {
    /// The new model.
    pub model: Model,
    /// The thinking level now in force.
    pub thinking_level: ThinkingLevel,
    /// True when it cycled through the scoped models.
    pub is_scoped: bool,
}

fn same(a: &Model, b: &Model) -> bool {
    a.provider == b.provider && a.id == b.id
}

impl AgentSession {
    /// The thinking levels the current model offers (`[off]` without reasoning).
    pub fn available_thinking_levels(&self) -> Vec<ThinkingLevel> {
        supported_thinking_levels(&self.inner.model())
    }

    /// True when the current model can reason.
    pub fn supports_thinking(&self) -> bool {
        self.inner.model().reasoning
    }

    /// Sets the thinking level, clamped to what the model offers. When it changes, a
    /// `thinking_level_change` entry is written and `thinking_level_changed` emitted.
    /// Returns the level in force.
    ///
    /// # Errors
    ///
    /// When the entry cannot be written.
    ///
    /// # Cancellation
    ///
    /// The level is set at the first poll. Dropped while its entry waits for an earlier
    /// write, the entry is not written; once it is being written, it is written and
    /// recorded all the same (the event is then not emitted).
    pub async fn set_thinking_level(
        &self,
        level: ThinkingLevel,
    ) -> Result<ThinkingLevel, AgentSessionError> {
        let inner = &self.inner;
        let model = inner.model();
        let effective = if supported_thinking_levels(&model).contains(&level) {
            level
        } else {
            clamp_thinking_level(&model, level)
        };
        let previous = std::mem::replace(&mut inner.agent.state().thinking_level, effective);
        if effective == previous {
            return Ok(effective);
        }
        inner
            .append(move |sm| sm.append_thinking_level_change(effective))
            .await?;
        if model.reasoning || effective != ThinkingLevel::Off {
            inner.state().settings.default_thinking_level = Some(effective);
            inner.settings_changed(SettingsChange::DefaultThinkingLevel(effective));
        }
        inner.emit(SessionEvent::ThinkingLevelChanged { level: effective });
        if let Some(runner) = inner.extensions.clone() {
            let event = ThinkingLevelSelectEvent {
                level: effective,
                previous_level: previous,
            };
            runner.thinking_level_select(self, event).await;
        }
        Ok(effective)
    }

    /// Steps to the next thinking level the model offers; `None` for a model without
    /// reasoning.
    ///
    /// # Errors
    ///
    /// When the entry cannot be written.
    ///
    /// # Cancellation
    ///
    /// As [`set_thinking_level`](Self::set_thinking_level).
    pub async fn cycle_thinking_level(&self) -> Result<Option<ThinkingLevel>, AgentSessionError> {
        let model = self.inner.model();
        if !model.reasoning {
            return Ok(None);
        }
        let levels = supported_thinking_levels(&model);
        let current = self.thinking_level();
        let next = match levels.iter().position(|l| *l == current) {
            Some(i) => levels[(i + 1) % levels.len()],
            None => levels[0],
        };
        self.set_thinking_level(next).await.map(Some)
    }

    /// The level to apply after switching: an explicit one, the current one for a model
    /// that reasons, else the default (so a level survives a detour through a model without
    /// reasoning).
    fn level_for_switch(&self, explicit: Option<ThinkingLevel>) -> ThinkingLevel {
        if let Some(level) = explicit {
            return level;
        }
        if !self.inner.model().reasoning {
            return self
                .inner
                .state()
                .settings
                .default_thinking_level
                .unwrap_or(DEFAULT_THINKING_LEVEL);
        }
        self.thinking_level()
    }

    /// Switches to `model`: a `model_change` entry, then the thinking level re-clamped (pi's
    /// `setModel`). When the context would not fit the new model's window it is compacted
    /// first, with the current model (pi switches and overflows on the next call).
    ///
    /// # Errors
    ///
    /// [`AgentSessionError::NoApiKey`] when the registry has no credentials for the model
    /// (unless the session has its own stream function), and write errors.
    ///
    /// # Cancel safety
    ///
    /// Dropping the future during the compaction leaves the model unchanged.
    pub async fn set_model(&self, model: Model) -> Result<(), AgentSessionError> {
        self.switch_model(model, None, ModelSelectSource::Set).await
    }

    async fn switch_model(
        &self,
        model: Model,
        explicit_level: Option<ThinkingLevel>,
        source: ModelSelectSource,
    ) -> Result<(), AgentSessionError> {
        let inner = &self.inner;
        inner.check_auth(&model)?;
        let previous = inner.model();
        // While a run is active the switch applies to the next run, and the guard checks
        // the new window before every call.
        if let Ok((op, _guard)) = inner.begin_op() {
            let settings = inner.state().settings.compaction;
            let shrinks = model.context_window < inner.model().context_window;
            if settings.enabled
                && shrinks
                && should_compact(
                    estimate(&inner.agent.state().messages),
                    model.context_window,
                    settings.reserve_tokens,
                )
            {
                inner
                    .run_auto_compaction(CompactionReason::Threshold, false, &op)
                    .await;
            }
        }
        let level = self.level_for_switch(explicit_level);
        inner.agent.set_model(model.clone());
        let (provider, id) = (model.provider.clone(), model.id.clone());
        inner
            .append(move |sm| sm.append_model_change(provider, id))
            .await?;
        inner.settings_changed(SettingsChange::DefaultModel {
            provider: model.provider.clone(),
            model_id: model.id.clone(),
        });
        if let Some(runner) = inner.extensions.clone()
            && !same(&previous, &model)
        {
            let event = ModelSelectEvent {
                model,
                previous_model: Some(previous),
                source,
            };
            runner.model_select(self, event).await;
        }
        self.set_thinking_level(level).await?;
        Ok(())
    }

    /// The models [`cycle_model`](Self::cycle_model) goes through (pi's `--models`).
    pub fn scoped_models(&self) -> Vec<ScopedModel> {
        self.inner.state().scoped_models.clone()
    }

    /// Sets the models [`cycle_model`](Self::cycle_model) goes through.
    pub fn set_scoped_models(&self, models: Vec<ScopedModel>) {
        self.inner.state().scoped_models = models;
    }

    /// Switches to the next (or previous) model: of the scoped models with credentials,
    /// applying a scoped model's thinking level; without scoped models, of every model with
    /// credentials (the builder's models first, then the registry's). `None` when there is
    /// no other model.
    ///
    /// # Errors
    ///
    /// As [`set_model`](Self::set_model).
    ///
    /// # Cancel safety
    ///
    /// As [`set_model`](Self::set_model).
    pub async fn cycle_model(
        &self,
        direction: CycleDirection,
    ) -> Result<Option<ModelCycle>, AgentSessionError> {
        let inner = &self.inner;
        let registry = inner.registry();
        let usable = |m: &Model| !inner.needs_auth() || registry.has_auth(m);
        let scoped: Vec<ScopedModel> = inner
            .state()
            .scoped_models
            .iter()
            .filter(|s| usable(&s.model))
            .cloned()
            .collect();
        let is_scoped = !inner.state().scoped_models.is_empty();
        let candidates: Vec<ScopedModel> = if is_scoped {
            scoped
        } else {
            let mut all: Vec<ScopedModel> = Vec::new();
            for m in inner
                .models
                .iter()
                .filter(|m| usable(m))
                .chain(registry.available())
            {
                if !all.iter().any(|s| same(&s.model, m)) {
                    all.push(ScopedModel::new(m.clone()));
                }
            }
            all
        };
        if candidates.len() <= 1 {
            return Ok(None);
        }
        let current = inner.model();
        let index = candidates
            .iter()
            .position(|s| same(&s.model, &current))
            .unwrap_or(0);
        let len = candidates.len();
        let next = match direction {
            CycleDirection::Forward => (index + 1) % len,
            CycleDirection::Backward => (index + len - 1) % len,
        };
        let next = candidates[next].clone();
        self.switch_model(
            next.model.clone(),
            next.thinking_level,
            ModelSelectSource::Cycle,
        )
        .await?;
        Ok(Some(ModelCycle {
            model: next.model,
            thinking_level: self.thinking_level(),
            is_scoped,
        }))
    }
}
