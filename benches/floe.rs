//! CPU benchmarks of the TUI core: rendering, filter+sort, update.
//! Run with `cargo bench --bench floe` (or `cargo xtask bench`).

mod data;

use divan::Bencher;
use floe::app::action::Action;
use floe::app::update::update;
use ratatui::Terminal;
use ratatui::backend::TestBackend;

fn main() {
    divan::main();
}

/// One frame of the Partitions tab holding 100,000 partitions (target ≤ 2 ms).
#[divan::bench(args = [(80, 24), (160, 48)])]
fn render_partitions_100k(b: Bencher, (w, h): (u16, u16)) {
    let mut s = data::loaded_state(10, 100_000, 100, '2');
    update(&mut s, Action::Resize(w, h));
    let mut term = Terminal::new(TestBackend::new(w, h)).unwrap();
    b.bench_local(|| {
        term.draw(|f| floe::ui::draw(f, &s)).unwrap();
    });
}

/// One frame of the Tables tab with 1,000 tables and of the Snapshots tab (chart) with 10,000 snapshots.
#[divan::bench(args = ['1', '3'])]
fn render_tables_and_snapshots(b: Bencher, tab: char) {
    let s = data::loaded_state(1000, 1000, 10_000, tab);
    let mut term = Terminal::new(TestBackend::new(160, 48)).unwrap();
    b.bench_local(|| {
        term.draw(|f| floe::ui::draw(f, &s)).unwrap();
    });
}

/// Filter then sort 100,000 partitions (the index rebuild a keystroke in `/` or `s` costs).
#[divan::bench(args = ["", "north", "2021-0", "zzz"])]
fn filter_sort_100k(b: Bencher, filter: &str) {
    let mut s = data::loaded_state(10, 100_000, 10, '2');
    let mut col = 0;
    b.bench_local(|| {
        s.partitions.grid.filter = filter.to_string();
        col = (col + 1) % floe::app::partitions::PARTITION_SORTS.len();
        s.partitions.grid.sort_col = col;
        s.partitions.reindex(None);
    });
}

/// `update` throughput: a navigation key on 1,000 tables / 100,000 partitions.
#[divan::bench(args = ['1', '2'])]
fn update_navigation(b: Bencher, tab: char) {
    let mut s = data::loaded_state(1000, 100_000, 10, tab);
    let mut down = true;
    b.bench_local(|| {
        down = !down;
        update(&mut s, data::key(if down { 'j' } else { 'k' }))
    });
}

/// `update` throughput: one table's stats arriving during a refresh of 1,000 tables
/// (evaluate the rules, re-sort the list).
#[divan::bench]
fn update_stats_result(b: Bencher) {
    let mut s = data::loaded_state(1000, 10, 10, '1');
    let tables = data::tables(1000);
    let mut i = 0;
    b.bench_local(|| {
        i = (i + 1) % tables.len();
        let Some(floe::app::action::Effect::Read { id, .. }) =
            floe::app::tables::reload_row(&mut s, &tables[i])
        else {
            panic!("a row");
        };
        update(
            &mut s,
            data::answer(
                id,
                floe::refresh::Answer::Table(tables[i].clone(), Ok(data::stats(i * 7))),
            ),
        )
    });
}

/// A scrape of `floe serve` at 1,000 tables per cluster, one cluster and three: the
/// clusters' families as their last refresh rendered them, joined with the exporter's own
/// metrics and written in the Prometheus text format (target ≤ 50 ms).
#[divan::bench(args = [1, 3])]
fn scrape_1000_tables(b: Bencher, clusters: usize) {
    use std::sync::Arc;
    let now = data::now();
    let published: Vec<Arc<floe::serve::Published>> = (0..clusters)
        .map(|c| {
            let profile = format!("prod-{c}");
            let report = data::report(&profile, 1000, now);
            Arc::new(floe::serve::Published::of(
                &profile,
                std::time::Duration::from_secs(120),
                floe::serve::families(&report),
            ))
        })
        .collect();
    b.bench_local(|| floe::serve::render(&published, floe::serve::Format::Text, now, true));
}
