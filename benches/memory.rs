//! Memory of a loaded screen: 1,000 tables, 100,000 partitions, 10,000 snapshots
//! (target ≤ 100 MB RSS). Prints resident-set figures from /proc.

mod data;

fn rss_kb(field: &str) -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with(field))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse().ok())
        })
        .unwrap_or(0)
}

fn main() {
    // `cargo test --benches` runs bench targets too; measure only under `cargo bench`.
    if !std::env::args().any(|a| a == "--bench") {
        return;
    }
    let base = rss_kb("VmRSS:");
    let s = data::loaded_state(1000, 100_000, 10_000, '2');
    let loaded = rss_kb("VmRSS:");
    let mut term = ratatui::Terminal::new(ratatui::backend::TestBackend::new(160, 48)).unwrap();
    term.draw(|f| floe::ui::draw(f, &s)).unwrap();
    let peak = rss_kb("VmHWM:");
    println!("memory: 1,000 tables + 100,000 partitions + 10,000 snapshots");
    println!("  RSS before  {:>7.1} MB", base as f64 / 1024.0);
    println!(
        "  RSS loaded  {:>7.1} MB (+{:.1} MB for the data)",
        loaded as f64 / 1024.0,
        (loaded - base) as f64 / 1024.0
    );
    println!(
        "  peak RSS    {:>7.1} MB (target ≤ 100 MB)",
        peak as f64 / 1024.0
    );
    std::hint::black_box(&s);
}
