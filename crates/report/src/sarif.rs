//! Findings as SARIF 2.1.0, the format GitHub code scanning, GitLab, VS
//! Code's SARIF viewer and most CI dashboards ingest.
//!
//! One run; the tool's rules are every finding kind (id = the kind's name,
//! with its summary, long explanation and default level); each result has
//! the primary location, the located notes as related locations (plain
//! notes join the message), the call trace as a code flow from the
//! outermost caller down, and the stable id as a partial fingerprint, so a
//! dashboard tracks a finding across runs the way `--baseline` does.

use std::collections::BTreeMap;

use findings::{Finding, Kind, Severity};
use program::Program;
use serde_sarif::sarif;

use crate::{JsonSpan, to_json};

/// The key of `partialFingerprints` holding the finding's stable id.
pub const FINGERPRINT: &str = "kanalyzeId/v1";

/// One result of the log: a finding, with what a baseline and a triage said
/// about it.
pub struct SarifItem<'a> {
    pub finding: &'a Finding,
    /// `Some("new")` / `Some("unchanged")` when a baseline was given.
    pub baseline: Option<&'static str>,
    /// A triage verdict that keeps it from being reported: (verdict,
    /// justification).
    pub suppression: Option<(String, String)>,
}

/// The SARIF log of `items`; `rules` are the finding kinds (all of them,
/// so that a result's `ruleIndex` is stable across runs).
pub fn to_sarif(
    program: &Program,
    items: &[SarifItem<'_>],
    rules: &[&Kind],
    version: &str,
) -> sarif::Sarif {
    let descriptors: Vec<sarif::ReportingDescriptor> = rules.iter().map(|k| rule(k)).collect();
    let results: Vec<sarif::Result> = items
        .iter()
        .map(|item| {
            let mut r = result(program, item.finding, rules);
            if let Some(state) = item.baseline {
                r.baseline_state = Some(serde_json::json!(state));
            }
            if let Some((verdict, why)) = &item.suppression {
                let mut props = BTreeMap::new();
                props.insert("verdict".to_string(), serde_json::json!(verdict));
                r.suppressions = Some(vec![
                    sarif::Suppression::builder()
                        .kind(serde_json::json!("external"))
                        .status(serde_json::json!("accepted"))
                        .justification(why.clone())
                        .properties(
                            sarif::PropertyBag::builder()
                                .additional_properties(props)
                                .build(),
                        )
                        .build(),
                ]);
            }
            r
        })
        .collect();
    let driver = sarif::ToolComponent::builder()
        .name("kanalyze")
        .full_name(format!("kanalyze {version}"))
        .version(version)
        .semantic_version(version)
        .rules(descriptors)
        .build();
    let run = sarif::Run::builder()
        .tool(sarif::Tool::builder().driver(driver).build())
        .results(results)
        .column_kind(serde_json::json!("unicodeCodePoints"))
        .build();
    sarif::Sarif::builder()
        .schema(sarif::SCHEMA_URL)
        .version(serde_json::json!("2.1.0"))
        .runs(vec![run])
        .build()
}

fn level(s: Severity) -> &'static str {
    match s {
        Severity::Error => "error",
        Severity::Warning => "warning",
        Severity::Note => "note",
    }
}

fn text(s: impl Into<String>) -> sarif::MultiformatMessageString {
    sarif::MultiformatMessageString::builder()
        .text(s.into())
        .build()
}

fn rule(k: &Kind) -> sarif::ReportingDescriptor {
    let mut props = BTreeMap::new();
    props.insert("family".to_string(), serde_json::json!(k.family));
    sarif::ReportingDescriptor::builder()
        .id(k.name)
        .name(k.name)
        .short_description(text(k.summary))
        .full_description(text(k.explanation.trim()))
        .help(text(format!(
            "{} (`kanalyze explain {}` for the whole explanation)",
            k.summary, k.name
        )))
        .default_configuration(
            sarif::ReportingConfiguration::builder()
                .level(serde_json::json!(level(k.severity)))
                .build(),
        )
        .properties(
            sarif::PropertyBag::builder()
                .tags(vec![k.family.to_string()])
                .additional_properties(props)
                .build(),
        )
        .build()
}

/// A URI for a source path: absolute paths as `file://` URIs, relative
/// ones relative to the source root (`%SRCROOT%`).
fn artifact(path: &str) -> sarif::ArtifactLocation {
    if path.starts_with('/') {
        sarif::ArtifactLocation::builder()
            .uri(format!("file://{}", percent_encode(path)))
            .build()
    } else {
        sarif::ArtifactLocation::builder()
            .uri(percent_encode(path))
            .uri_base_id("%SRCROOT%")
            .build()
    }
}

/// Percent-encodes what may not appear in a URI path.
fn percent_encode(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    for b in path.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'/' | b'-' | b'_' | b'.' | b'~' => {
                out.push(b as char)
            }
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

fn location(span: &JsonSpan, message: Option<&str>) -> sarif::Location {
    let region = sarif::Region::builder()
        .start_line(span.line as i64)
        .start_column(span.column as i64)
        .end_line(span.end_line as i64)
        .end_column(span.end_column as i64)
        .build();
    let physical = sarif::PhysicalLocation::builder()
        .artifact_location(artifact(&span.file))
        .region(region)
        .build();
    match message {
        Some(m) => sarif::Location::builder()
            .physical_location(physical)
            .message(sarif::Message::builder().text(m).build())
            .build(),
        None => sarif::Location::builder()
            .physical_location(physical)
            .build(),
    }
}

fn result(program: &Program, f: &Finding, rules: &[&Kind]) -> sarif::Result {
    let j = to_json(program, f);
    // Plain notes read best as part of the message, as rustc prints them
    // under the primary span; located ones become related locations.
    let mut message = j.message.clone();
    if let Some(label) = &j.label {
        message.push_str(&format!("\n{label}"));
    }
    let mut related = Vec::new();
    for n in &j.notes {
        match &n.span {
            Some(span) => related.push(location(span, Some(&format!("{}: {}", n.kind, n.message)))),
            None => message.push_str(&format!("\n{}: {}", n.kind, n.message)),
        }
    }
    let mut fingerprints = BTreeMap::new();
    fingerprints.insert(FINGERPRINT.to_string(), j.id.clone());
    let mut props = BTreeMap::new();
    if let Some(function) = &j.function {
        props.insert("function".to_string(), serde_json::json!(function));
    }
    let sarif_level = match f.severity {
        Severity::Error => sarif::ResultLevel::Error,
        Severity::Warning => sarif::ResultLevel::Warning,
        Severity::Note => sarif::ResultLevel::Note,
    };
    let rule_index = rules.iter().position(|k| k.name == f.kind);
    let mut r = sarif::Result::builder()
        .rule_id(f.kind)
        .level(sarif_level)
        .message(sarif::Message::builder().text(message).build())
        .partial_fingerprints(fingerprints)
        .properties(
            sarif::PropertyBag::builder()
                .additional_properties(props)
                .build(),
        )
        .build();
    r.rule_index = rule_index.map(|i| i as i64);
    if let Some(span) = &j.span {
        r.locations = Some(vec![location(span, None)]);
    }
    if !related.is_empty() {
        r.related_locations = Some(related);
    }
    // The call trace, from the outermost caller down to the finding.
    let steps: Vec<sarif::ThreadFlowLocation> = j
        .trace
        .iter()
        .filter_map(|frame| {
            let span = frame.span.as_ref()?;
            let what = match frame.edge {
                "drop" => "drops",
                "virtual" => "calls through a vtable",
                "indirect" => "calls through a function pointer",
                _ => "calls",
            };
            Some(
                sarif::ThreadFlowLocation::builder()
                    .location(location(
                        span,
                        Some(&format!("`{}` {what} `{}`", frame.caller, frame.callee)),
                    ))
                    .build(),
            )
        })
        .chain(j.span.as_ref().map(|span| {
            sarif::ThreadFlowLocation::builder()
                .location(location(span, Some(&j.message)))
                .build()
        }))
        .collect();
    if steps.len() > 1 {
        let flow = sarif::ThreadFlow::builder().locations(steps).build();
        r.code_flows = Some(vec![
            sarif::CodeFlow::builder().thread_flows(vec![flow]).build(),
        ]);
    }
    r
}
