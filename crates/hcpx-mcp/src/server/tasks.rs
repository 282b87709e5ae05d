//! The tasks extension (`io.modelcontextprotocol/tasks`) over the store's tasks: a call from a client that
//! declared the extension and still running after the operator's bound (at once for a command its pack marks
//! `long`) answers a task (`resultType: "task"`), and `tasks/get`, `tasks/cancel` and `tasks/update` find it in
//! the store, on any replica. A task is its Principal's alone: another's id (or another tenant's) is answered
//! exactly as an id that never existed. A client that did not declare the extension waits for its call as
//! before (`command_call`).

use rmcp::model::{
    CallToolResponse, CancelTaskParams, CreateTaskResult, DetailedTask, GetTaskParams, GetTaskResult,
    JsonObject, Task, TaskPayload, TaskStatus as Status, UpdateTaskParams,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer};

use super::{hide_host_paths, served, to_mcp_result, HcpServer};
use crate::model::{Code, Envelope, Principal, ResultEnvelope};
use crate::runtime::tasks::Started;
use crate::store::tasks::{TaskRecord, TaskStatus};
use crate::tools::ToolSpec;

/// How often a client is asked to poll a working task.
const POLL_INTERVAL_MS: u64 = 500;

/// What a client reads of a task whose replica stopped mid-call: the audit's `unknown`, and what to do.
const UNKNOWN: &str = "unknown: the replica running this call stopped before it ended, so whether the command ran is unknown; find out from the system it acts on before calling it again";

/// Whether the client of this request takes tasks: it declared the extension (in the request's `_meta` from
/// protocol 2026-07-28 on, at `initialize` before).
pub(super) fn takes_tasks(context: &RequestContext<RoleServer>) -> bool {
    context.client_capabilities().is_some_and(|c| c.supports_tasks())
}

/// The extension's `Task` of a stored one.
fn task_of(rec: &TaskRecord) -> Task {
    let status = match rec.status {
        TaskStatus::Working => Status::Working,
        TaskStatus::Completed => Status::Completed,
        TaskStatus::Failed => Status::Failed,
        TaskStatus::Cancelled => Status::Cancelled,
    };
    let mut t = Task::new(rec.id.clone(), status, rec.created_at(), rec.updated_at())
        .with_poll_interval_ms(POLL_INTERVAL_MS);
    t.ttl_ms = rec.ttl_ms();
    let message = match rec.status {
        TaskStatus::Working if rec.cancel_requested => Some("cancelling".to_string()),
        TaskStatus::Working => Some(format!("running {}.{}", rec.pack_id, rec.verb_key)),
        TaskStatus::Failed => Some(UNKNOWN.to_string()),
        _ => None,
    };
    match message {
        Some(m) => t.with_status_message(m),
        None => t,
    }
}

fn object(v: serde_json::Value) -> JsonObject {
    match v {
        serde_json::Value::Object(m) => m,
        _ => JsonObject::new(),
    }
}

fn unknown_task(id: &str) -> McpError {
    McpError::invalid_params(
        format!(
            "unknown task {id}; a task is found only by the Principal that made it, and not once it expired (sandbox.json tasks.keep_ms): call the tool again"
        ),
        None,
    )
}

impl HcpServer {
    /// A command call from a client that takes tasks: answered as any call when it ends within the bound, else
    /// a task. Cancelled by the client before it became one, it stops as any call does.
    pub(super) async fn call_or_task(
        &self,
        tool: &ToolSpec,
        principal: Principal,
        args: serde_json::Map<String, serde_json::Value>,
        context: &RequestContext<RoleServer>,
    ) -> CallToolResponse {
        let env = Envelope::new(&tool.pack_id, &tool.verb_key, args);
        let work = self.runtime.clone().exec_or_task(principal, env, self.call_context(context));
        let started = tokio::select! {
            s = work => s,
            () = context.ct.cancelled() => {
                let why = "cancelled: the client cancelled the call";
                let out = ResultEnvelope::denied(&tool.pack_id, &tool.verb_key, Code::Cancelled, why);
                Started::Answered(Box::new(out))
            }
        };
        match started {
            Started::Answered(out) => to_mcp_result(crate::call::answer(&out)).into(),
            Started::Task(rec) => CallToolResponse::Task(CreateTaskResult::new(task_of(&rec))),
        }
    }

    /// The tenant and Principal a task request is for: over HTTP the bearer's, over stdio the local one.
    fn asker(&self, context: &RequestContext<RoleServer>) -> Result<(String, String), McpError> {
        if let Some(who) = served(context) {
            return Ok((who.principal.tenant.clone(), who.principal.id.clone()));
        }
        (self.principal)().map(|p| (p.tenant, p.id)).map_err(|why| McpError::invalid_params(why, None))
    }

    /// Task `id` of the asker, after recording its cancellation when `cancel`; an unknown task otherwise.
    async fn find_task(
        &self,
        id: String,
        context: &RequestContext<RoleServer>,
        cancel: bool,
    ) -> Result<TaskRecord, McpError> {
        let (tenant, principal) = self.asker(context)?;
        let store = self.runtime.store().clone();
        let key = id.clone();
        let found = tokio::task::spawn_blocking(move || {
            if cancel {
                store.task_cancel(&tenant, &principal, &key)
            } else {
                store.task(&tenant, &principal, &key)
            }
        })
        .await
        .map_err(|e| McpError::internal_error(format!("the task's thread failed: {e}"), None))?
        .map_err(|e| McpError::internal_error(format!("the store does not answer: {e}; retry"), None))?;
        found.ok_or_else(|| unknown_task(&id))
    }

    /// `tasks/get`: the task, and its result once it ended (the tool result its call answered, as the call would
    /// have answered it, host paths hidden from a served caller).
    pub(super) async fn task_get(
        &self,
        request: GetTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, McpError> {
        let rec = self.find_task(request.task_id, &context, false).await?;
        let payload = match rec.status {
            TaskStatus::Working => TaskPayload::Working,
            TaskStatus::Cancelled => TaskPayload::Cancelled,
            TaskStatus::Failed => TaskPayload::Failed {
                error: object(serde_json::json!({
                    "code": rmcp::model::ErrorCode::INTERNAL_ERROR.0,
                    "message": UNKNOWN,
                    "data": { "outcome": "unknown" },
                })),
            },
            TaskStatus::Completed => {
                let out = rec.result.clone().unwrap_or_else(|| {
                    ResultEnvelope::denied(
                        &rec.pack_id,
                        &rec.verb_key,
                        Code::AdapterFailed,
                        "the task kept no result",
                    )
                });
                let mut answer = CallToolResponse::Complete(to_mcp_result(crate::call::answer(&out)));
                if served(&context).is_some() {
                    answer = hide_host_paths(self.runtime.host_paths(), answer);
                }
                let result = match answer {
                    CallToolResponse::Complete(r) => object(serde_json::to_value(r).unwrap_or_default()),
                    _ => JsonObject::new(),
                };
                TaskPayload::Completed { result }
            }
        };
        Ok(GetTaskResult::new(DetailedTask::new(task_of(&rec), payload)))
    }

    /// `tasks/cancel`: recorded in the store; the replica running the call stops it within a poll (a wrap's
    /// whole process group is killed, a composite stopped) and the task ends `cancelled`. A task that already
    /// ended is left as it is.
    pub(super) async fn task_cancel(
        &self,
        request: CancelTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.find_task(request.task_id, &context, true).await.map(|_| ())
    }

    /// `tasks/update`: no task here asks its client for input, so there is nothing to answer; a known task is
    /// acknowledged (unknown keys are ignored, as the extension says), an unknown one refused.
    pub(super) async fn task_update(
        &self,
        request: UpdateTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.find_task(request.task_id, &context, false).await.map(|_| ())
    }
}
