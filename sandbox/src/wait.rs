//! Waiting for what a test can observe, instead of sleeping.

/// Waits until `reached()` holds — something a test can observe, such as a request in a
/// server's log — checking every 10 ms; panics naming `what` if it has not within 30 s.
pub async fn wait_until(what: &str, reached: impl Fn() -> bool) {
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(30);
    while !reached() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "waited 30 s for {what}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
}
