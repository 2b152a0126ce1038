//! The JSON Schema of `config.toml`, generated from the file model (`floe config schema`,
//! `assets/config.schema.json`), so editors complete and validate the file.

use std::borrow::Cow;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde_json::Value;

use super::file::FileConfig;
use super::keys::KeySpec;
use crate::units::{Bytes, Dur};

/// The schema, pretty-printed with a trailing newline (the shipped file's exact text).
pub fn json_schema() -> String {
    let generator = schemars::generate::SchemaSettings::draft2020_12().into_generator();
    let mut schema = generator.into_root_schema_for::<FileConfig>().to_value();
    // TOML has no null: an absent key is the only "none".
    drop_null(&mut schema);
    if let Some(root) = schema.as_object_mut() {
        root.insert("title".into(), "floe configuration".into());
        root.insert(
            "description".into(),
            "config.toml of floe (config.example.toml documents every key)".into(),
        );
    }
    let mut text = serde_json::to_string_pretty(&schema).expect("a schema serializes");
    text.push('\n');
    text
}

/// Remove `null` from every `type` list and `anyOf`/`oneOf` (what `Option` adds).
fn drop_null(v: &mut Value) {
    match v {
        Value::Object(map) => {
            if let Some(Value::Array(types)) = map.get_mut("type") {
                types.retain(|t| t != "null");
                if types.len() == 1 {
                    let only = types.remove(0);
                    map.insert("type".into(), only);
                }
            }
            for key in ["anyOf", "oneOf"] {
                if let Some(Value::Array(alts)) = map.get_mut(key) {
                    alts.retain(|a| a.get("type").is_none_or(|t| t != "null"));
                    if alts.len() == 1 {
                        let only = alts.remove(0);
                        map.remove(key);
                        if let Value::Object(inner) = only {
                            for (k, val) in inner {
                                map.entry(k).or_insert(val);
                            }
                        }
                    }
                }
            }
            map.values_mut().for_each(drop_null);
        }
        Value::Array(items) => items.iter_mut().for_each(drop_null),
        _ => {}
    }
}

impl JsonSchema for Bytes {
    fn schema_name() -> Cow<'static, str> {
        "Size".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "description": "A size: bytes as an integer, or a string with a binary unit (\"128MB\", \"128 MiB\", \"1.5GB\").",
            "type": ["integer", "string"],
            "minimum": 0
        })
    }
}

impl JsonSchema for Dur {
    fn schema_name() -> Cow<'static, str> {
        "Duration".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "description": "A duration: \"30s\", \"36h\", \"7d\", \"1h 30m\".",
            "type": "string"
        })
    }
}

impl JsonSchema for KeySpec {
    fn schema_name() -> Cow<'static, str> {
        "KeyBinding".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "description": "A key (\"q\", \"ctrl-c\", \"F5\") or several.",
            "type": ["string", "array"],
            "items": { "type": "string" }
        })
    }
}
