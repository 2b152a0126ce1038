//! `floe check`: connect, discover, read every table with bounded concurrency, evaluate.

use chrono::Utc;
use futures::StreamExt;

use super::{Report, TableReport, TrinoInfo};
use crate::config::Settings;
use crate::health::{Finding, Health, Severity, evaluate};
use crate::lakehouse::model::TableRef;
use crate::lakehouse::queries::Lakehouse;
use crate::trino::Client;

/// Evaluate every table the settings select (plus `--table` globs).
pub async fn run(settings: &Settings, globs: &[String]) -> Report {
    let started = Utc::now();
    let mut report = Report {
        generated_at: started,
        profile: settings.profile.clone(),
        trino: TrinoInfo {
            url: settings.trino.url.to_string(),
            version: None,
            uptime_seconds: None,
        },
        airflow: None,
        tables: Vec::new(),
        dags: Vec::new(),
        findings: Vec::new(),
        fatal: None,
    };
    let client = match Client::from_settings(&settings.trino, settings.query_timeout) {
        Ok(c) => c,
        Err(e) => {
            report.fatal = Some(e.to_string());
            return report;
        }
    };
    let lake = Lakehouse::new(
        client,
        settings.trino.catalog.clone(),
        settings.health.clone(),
    );
    match lake.connect().await {
        Ok(info) => {
            report.trino.version = Some(info.node_version.version.clone());
            report.trino.uptime_seconds = info.uptime_secs();
        }
        Err(e) => {
            report.fatal = Some(e.to_string());
            return report;
        }
    }
    let mut all_globs = settings.trino.tables.clone();
    all_globs.extend(globs.iter().cloned());
    let tables = match lake.discover(&settings.trino.schemas, &all_globs).await {
        Ok(t) => t,
        Err(e) => {
            report.fatal = Some(format!(
                "cannot list the tables of catalog {}: {e}",
                settings.trino.catalog
            ));
            return report;
        }
    };
    let now = Utc::now();
    let lake = &lake;
    let results: Vec<(TableRef, Result<_, _>)> = futures::stream::iter(tables)
        .map(|t| async move {
            let r = lake.table_stats(&t).await;
            (t, r)
        })
        .buffer_unordered(settings.max_concurrent_queries)
        .collect()
        .await;
    for (table, r) in results {
        report.tables.push(match r {
            Ok(stats) => TableReport {
                health: evaluate(&stats, None, &settings.health, now),
                table,
                stats: Some(stats),
                error: None,
                dag: None,
            },
            Err(e) => TableReport {
                health: Health {
                    status: Severity::Unknown,
                    score: 0,
                    findings: vec![Finding {
                        rule: "unreadable",
                        severity: Severity::Unknown,
                        message: format!("health query failed: {e}"),
                        penalty: 0,
                    }],
                },
                table,
                stats: None,
                error: Some(e.to_string()),
                dag: None,
            },
        });
    }
    report.tables.sort_by(|a, b| a.table.cmp(&b.table));
    report.generated_at = now;
    report
}
