//! The measurements beside floe's own: each statement shape alone, and the strategies
//! floe did not take.

use std::time::Instant;

use floe::lakehouse::model::TableRef;
use floe::lakehouse::queries::{Layout, parse_stats, stats_sql};
use futures::StreamExt;

use crate::cost::{coordinator_cost, print_cost, shape};
use crate::driver::Floe;
use crate::lab::Lab;
use crate::secs;

/// Each statement shape floe sends, run alone on the real coordinator over tables spread
/// across the fleet: what the coordinator spends on one of each.
pub(crate) async fn shapes(lab: &Lab, catalog: &str, tables: &[TableRef], u: &str) {
    let lake = lab.client(u, catalog);
    let _ = lake.connect().await;
    let _ = lake.discover(&[], &[]).await;
    let step = (tables.len() / 5).max(1);
    let spread: Vec<TableRef> = tables.iter().step_by(step).take(5).cloned().collect();
    let widths: Vec<usize> = std::env::var("FLEET_SHAPE_BATCHES")
        .unwrap_or_else(|_| "10,50".into())
        .split(',')
        .filter_map(|w| w.trim().parse().ok())
        .collect();
    for &b in &widths {
        println!("  shapes: layout batch and probe of {b}");
        let batch: Vec<TableRef> = tables.iter().take(b).cloned().collect();
        let _ = lake
            .client
            .query(&floe::lakehouse::probe::layout_sql(
                &batch,
                "partition_summaries",
            ))
            .await;
        let _ = lake.probe(&batch).await;
    }
    for t in &spread {
        println!("  shapes: health, partitions, snapshots of {t}");
        let _ = lake.table_stats(t).await;
        let _ = lake.partitions(t).await;
        let _ = lake.snapshots(t).await;
    }
    let qs = lab.queries_of(u).await;
    println!(
        "statement shapes, each alone on the coordinator (batches of {widths:?} tables; health, partitions, snapshots of {} tables):",
        spread.len()
    );
    for q in &qs {
        let sql = q["sql"].as_str().unwrap_or("");
        let kind = shape(sql);
        if kind == "other" {
            continue;
        }
        let width = sql.matches("UNION ALL").count() + 1;
        let st = &q["stats"];
        println!(
            "    {kind}{}: elapsed {} ms, planning {} ms, cpu {} ms, processed {} B / {} rows, {} splits{}",
            if matches!(kind, "layout batch" | "change probe") {
                format!(" of {width}")
            } else {
                String::new()
            },
            st["elapsed_ms"],
            st["planning_ms"],
            st["cpu_ms"],
            st["bytes"],
            st["rows"],
            st["splits"],
            match q["error_name"].as_str() {
                Some(e) => format!(" (failed: {e})"),
                None => String::new(),
            }
        );
    }
    for l in coordinator_cost(&qs) {
        println!("    {l}");
    }
}

/// One health statement per table vs K tables per statement vs more in flight.
pub(crate) async fn strategies(
    lab: &Lab,
    catalog: &str,
    floe: &Floe,
    tables: &[TableRef],
    compare: usize,
    latency: u64,
    user: &dyn Fn(&str) -> String,
) {
    let subset: Vec<TableRef> = tables.iter().take(compare).cloned().collect();
    let layout_of = |t: &TableRef| match floe.state.tables.row(t).and_then(|r| r.stats()) {
        Some(s) if !s.partitioned => Layout::Unpartitioned,
        _ => Layout::PartitionColumn,
    };
    let layouts: std::collections::HashMap<TableRef, Layout> =
        subset.iter().map(|t| (t.clone(), layout_of(t))).collect();
    let layouts = &layouts;
    let m = subset.len();
    println!("strategies over {m} tables, {latency} ms server time per statement:");
    for conc in [4usize, 8, 16] {
        let u = user(&format!("per_table_c{conc}"));
        lab.server_time(&u, latency).await;
        let lake = lab.client(&u, catalog);
        // As for the batches: every table's layout known (no statement fails).
        lake.remember_layouts(layouts.iter().map(|(t, l)| (t.clone(), *l)));
        let t0 = Instant::now();
        let ok = futures::stream::iter(subset.clone())
            .map(|t| {
                let lake = lake.clone();
                async move { lake.table_stats(&t).await.is_ok() }
            })
            .buffer_unordered(conc)
            .filter(|ok| futures::future::ready(*ok))
            .count()
            .await;
        let qs = lab.queries_of(&u).await;
        println!(
            "  one statement per table, {conc} in flight: {} ({ok}/{m} ok, {} statements)",
            secs(t0.elapsed()),
            qs.len()
        );
        print_cost(lab, &qs);
        lab.clear(&u).await;
    }
    for k in [10usize, 50] {
        let u = user(&format!("union_k{k}"));
        lab.server_time(&u, latency).await;
        let lake = lab.client(&u, catalog);
        let t0 = Instant::now();
        let batches: Vec<Vec<TableRef>> = subset.chunks(k).map(|c| c.to_vec()).collect();
        let results = futures::stream::iter(batches)
            .map(|b| {
                let lake = lake.clone();
                async move {
                    let sql = b
                        .iter()
                        .enumerate()
                        .map(|(i, t)| {
                            format!(
                                "SELECT {i} AS i, h.* FROM ({}) h",
                                stats_sql(t, &lake.scan, layouts[t], lake.meta_tables())
                            )
                        })
                        .collect::<Vec<_>>()
                        .join("\nUNION ALL\n");
                    match lake.client.query(&sql).await {
                        Ok(out) => out
                            .rows
                            .iter()
                            .filter(|r| parse_stats(r, Layout::Unpartitioned).is_ok())
                            .count(),
                        Err(e) => {
                            eprintln!("  UNION ALL of {k}: {e}");
                            0
                        }
                    }
                }
            })
            .buffer_unordered(4)
            .collect::<Vec<usize>>()
            .await;
        let qs = lab.queries_of(&u).await;
        println!(
            "  UNION ALL of {k} health aggregates, 4 in flight: {} ({}/{m} ok, {} statements)",
            secs(t0.elapsed()),
            results.iter().sum::<usize>(),
            qs.len()
        );
        print_cost(lab, &qs);
        lab.clear(&u).await;
    }
}
