//! The seven built-in tools show the model exactly what pi's do: name, description, parameter
//! schema (key order included), and the prompt snippet and guidelines of pi's system prompt.
//! `tests/tools/pi-definitions.json` is written from pi 0.73.1 by
//! `node scripts/gen-tool-definitions.mjs` (`.ci/run` checks it is current).
#![cfg(feature = "tools")]

use pi_engine::tools::BuiltinTools;
use serde_json::Value;

#[test]
fn every_definition_is_pis_byte_for_byte() {
    let pi: serde_json::Map<String, Value> =
        serde_json::from_str(include_str!("tools/pi-definitions.json")).unwrap();
    let tools = BuiltinTools::new("/CWD").all();
    assert_eq!(tools.len(), pi.len());
    for tool in tools {
        let want = &pi[tool.name()];
        let def = tool.definition();
        assert_eq!(
            def.description,
            want["description"].as_str().unwrap(),
            "{}",
            tool.name()
        );
        // Serialized text, so the key order counts too.
        assert_eq!(
            serde_json::to_string(&def.parameters).unwrap(),
            serde_json::to_string(&want["parameters"]).unwrap(),
            "{}",
            tool.name()
        );
        assert_eq!(tool.label(), want["label"].as_str().unwrap());
        assert_eq!(
            tool.prompt_snippet(),
            want["promptSnippet"].as_str(),
            "{}",
            tool.name()
        );
        let guidelines: Vec<&str> = want["promptGuidelines"]
            .as_array()
            .unwrap()
            .iter()
            .map(|g| g.as_str().unwrap())
            .collect();
        assert_eq!(
            tool.prompt_guidelines(),
            guidelines.as_slice(),
            "{}",
            tool.name()
        );
    }
}
