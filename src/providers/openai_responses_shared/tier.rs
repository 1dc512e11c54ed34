//! Pricing by service tier (`flex`, `priority`), as pi's `applyServiceTierPricing`.

use crate::llm::message::Usage;

/// How a decoder prices usage by service tier.
#[derive(Debug, Clone)]
pub(crate) enum TierPricing {
    /// Azure: no tier multiplier.
    None,
    /// OpenAI: `flex` ×0.5, `priority` ×2 (×2.5 for gpt-5.5), from the response's tier, else
    /// the requested one.
    OpenAi { requested: Option<String> },
    /// Codex: as OpenAI, but a requested `flex` or `priority` wins over a reported `default`.
    Codex { requested: Option<String> },
}

/// The multiplier of a service tier (pi's `getServiceTierCostMultiplier`).
pub(crate) fn service_tier_multiplier(model_id: &str, tier: Option<&str>) -> f64 {
    match tier {
        Some("flex") => 0.5,
        Some("priority") if model_id == "gpt-5.5" => 2.5,
        Some("priority") => 2.0,
        _ => 1.0,
    }
}

/// Scales every cost of `usage` by the tier's multiplier (pi's `applyServiceTierPricing`).
pub(crate) fn apply_service_tier_pricing(usage: &mut Usage, model_id: &str, tier: Option<&str>) {
    let multiplier = service_tier_multiplier(model_id, tier);
    if multiplier == 1.0 {
        return;
    }
    let cost = &mut usage.cost;
    cost.input *= multiplier;
    cost.output *= multiplier;
    cost.cache_read *= multiplier;
    cost.cache_write *= multiplier;
    cost.total = cost.input + cost.output + cost.cache_read + cost.cache_write;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::model::Model;

    use crate::llm::model::ModelCost;

    #[test]
    fn service_tier_multipliers() {
        assert_eq!(service_tier_multiplier("gpt-5", Some("flex")), 0.5);
        assert_eq!(service_tier_multiplier("gpt-5", Some("priority")), 2.0);
        assert_eq!(service_tier_multiplier("gpt-5.5", Some("priority")), 2.5);
        assert_eq!(service_tier_multiplier("gpt-5", Some("default")), 1.0);
        assert_eq!(service_tier_multiplier("gpt-5", None), 1.0);
        let model =
            Model::new("gpt-5", "", "", "").with_cost(ModelCost::new(1.25, 10.0, 0.125, 0.0));
        let mut usage = Usage::new(1000, 2000, 3000, 0);
        crate::llm::calculate_cost(&model, &mut usage);
        let base = usage.cost;
        apply_service_tier_pricing(&mut usage, "gpt-5", Some("flex"));
        assert_eq!(usage.cost.input, base.input * 0.5);
        assert_eq!(usage.cost.output, base.output * 0.5);
        assert_eq!(usage.cost.cache_read, base.cache_read * 0.5);
        assert_eq!(
            usage.cost.total,
            usage.cost.input + usage.cost.output + usage.cost.cache_read
        );
    }
}
