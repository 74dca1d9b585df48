//! The servers' ceiling: the same objects created and deleted with no planning and no checks.

use std::path::Path;
use std::time::Instant;

use futures::{StreamExt, stream};
use serde_json::{Value, json};

use super::measures::in_flight;
use super::servers::{MoveOptions, pair};

/// How many writes per object a raw ceiling run makes.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum RawWrites {
    /// Create in the target, delete from the source.
    Two,
    /// The move's four: create, then patch, in the target; patch, then delete, in the source.
    Four,
}

/// The servers' ceiling: every object created in the target and deleted from the source with
/// `concurrency` requests in flight over the same loopback connections the plugin uses (HTTPS
/// with client certificates, or plain HTTP with `--plain-http`), no planning,
/// no checks. Seconds, and the writes in flight while creating and deleting.
pub(super) async fn raw_ceiling(
    options: &MoveOptions,
    dir: &Path,
    writes: RawWrites,
) -> anyhow::Result<(f64, (f64, f64))> {
    let tag = match writes {
        RawWrites::Two => "raw2",
        RawWrites::Four => "raw4",
    };
    let pair = pair(options, dir, tag).await?;
    // Deletes in any order: the collector would race them for the dependents.
    pair.source.set_garbage_collection(false);
    let source = pair.serving.0.client().await?;
    let target = pair.serving.1.client().await?;
    capi_sandbox::api::create(
        &target,
        &json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "bench"}}),
    )
    .await?;
    let started = Instant::now();
    let bodies: Vec<Value> = pair.objects.iter().map(create_body).collect();
    let touch = json!({"metadata": {"annotations": {"bench.capi-sandbox/touched": "true"}}});
    let touch = &touch;
    let created: Vec<anyhow::Result<()>> = stream::iter(bodies.iter().map(|b| {
        let target = target.clone();
        async move {
            capi_sandbox::api::create(&target, b).await?;
            if writes == RawWrites::Four {
                patch_object(&target, b, touch).await?;
            }
            Ok(())
        }
    }))
    .buffer_unordered(options.concurrency)
    .collect()
    .await;
    created.into_iter().collect::<anyhow::Result<Vec<()>>>()?;
    let deleted: Vec<anyhow::Result<()>> = stream::iter(pair.objects.iter().map(|o| {
        let source = source.clone();
        async move {
            if writes == RawWrites::Four {
                patch_object(&source, o, touch).await?;
            }
            capi_sandbox::api::delete(
                &source,
                o["apiVersion"].as_str().unwrap_or_default(),
                o["kind"].as_str().unwrap_or_default(),
                "bench",
                o["metadata"]["name"].as_str().unwrap_or_default(),
            )
            .await
            .map(|_| ())
        }
    }))
    .buffer_unordered(options.concurrency)
    .collect()
    .await;
    deleted.into_iter().collect::<anyhow::Result<Vec<()>>>()?;
    let seconds = started.elapsed().as_secs_f64();
    // Only the bench's own client talks to these servers.
    Ok((
        seconds,
        in_flight(&pair.source.requests(), &pair.target.requests(), ""),
    ))
}

/// `object` as a create sends it: without what the server sets, and without owners (the
/// ceiling creates in any order).
fn create_body(object: &Value) -> Value {
    let mut body = object.clone();
    let meta = body["metadata"].as_object_mut().expect("metadata");
    for key in [
        "uid",
        "resourceVersion",
        "creationTimestamp",
        "managedFields",
        "ownerReferences",
    ] {
        meta.remove(key);
    }
    body
}

async fn patch_object(client: &kube::Client, object: &Value, patch: &Value) -> anyhow::Result<()> {
    capi_sandbox::api::merge_patch(
        client,
        object["apiVersion"].as_str().unwrap_or_default(),
        object["kind"].as_str().unwrap_or_default(),
        "bench",
        object["metadata"]["name"].as_str().unwrap_or_default(),
        patch,
    )
    .await
    .map(|_| ())
}
