//! `hcpx mcp`: the activated packs as MCP tools over stdio (rmcp). The handler only turns MCP requests into
//! envelopes and result envelopes into tool results; the pipeline decides everything else.

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, CancelTaskParams, GetPromptRequestParams,
    GetPromptResponse, GetTaskParams, GetTaskResult, Implementation, ListPromptsResult, ListResourcesResult,
    ListToolsResult, PaginatedRequestParams, ReadResourceRequestParams, ReadResourceResponse,
    ServerCapabilities, ServerConfig, Tool, ToolAnnotations, UpdateTaskParams,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler, ServiceExt};
use std::sync::Arc;

use super::call::{call, to_mcp_result, ToolAnswer};
use super::progress::with_progress;
use super::tool_cache::{ToolCache, ToolMap};
use super::tools::ToolSpec;
use crate::model::{Code, Principal, ResultEnvelope};
use crate::runtime::{CallContext, Runtime};
use crate::store::principals::Authenticated;

mod tasks;

/// Who a call is for, asked at each call (so a grant taken back in `grants.json` holds at once), or why
/// there is no Principal.
pub type PrincipalSource = Arc<dyn Fn() -> Result<Principal, String> + Send + Sync>;

/// The MCP server over one runtime, for one Principal (over stdio: the local user, invoker `mcp`).
#[derive(Clone)]
pub struct HcpServer {
    runtime: Arc<Runtime>,
    principal: PrincipalSource,
    /// Every call's context: over stdio, the project the host runs in.
    context: CallContext,
    /// One `hcp` tool with a command language instead of one tool per command.
    single_tool: bool,
    /// The tool maps, kept per viewer and pack version; shared by the clones a served face makes per request.
    tool_cache: ToolCache,
}

impl HcpServer {
    pub fn new(runtime: Arc<Runtime>, principal: PrincipalSource, context: CallContext) -> HcpServer {
        HcpServer { runtime, principal, context, single_tool: false, tool_cache: ToolCache::default() }
    }

    /// Serves one `hcp` tool (`--single-tool`).
    pub fn single_tool(mut self, on: bool) -> HcpServer {
        self.single_tool = on;
        self
    }

    /// The `hcp` tool: it may run writes, so it is annotated as the strongest of them.
    fn hcp_tool(&self) -> Tool {
        let open_world = self.tools(None).values().any(|t| t.hints.open_world);
        let annotations = ToolAnnotations::with_title("HCP packs".to_string())
            .read_only(false)
            .destructive(true)
            .idempotent(false)
            .open_world(open_world);
        Tool::new(
            super::single::TOOL,
            "Run the commands of the activated HCP packs: `list`, `commands PACK`, `skill PACK`, `exec PACK VERB {json args}`.",
            Arc::new(super::single::input_schema()),
        )
        .with_title("HCP packs".to_string())
        .with_annotations(annotations)
    }

    /// The tools as they are now for `viewer` (`None`: every tenant's, whoever may call them): the activated packs
    /// are asked of the store each time, so an install shows at once, and the map is built again only when they
    /// changed (`ToolCache`).
    fn tools(&self, viewer: Option<&Principal>) -> ToolMap {
        self.tool_cache.tools(&self.runtime, viewer)
    }

    /// Who a request is for, as far as what it is shown goes: over HTTP the Principal its token authenticated,
    /// over stdio the local one (`None` when `grants.json` cannot be read: the tools of tenant `local` are listed,
    /// and each call is refused with the reason).
    fn viewer(&self, context: &RequestContext<RoleServer>) -> Option<Principal> {
        match served(context) {
            Some(who) => Some(who.principal.clone()),
            None => (self.principal)().ok(),
        }
    }

    /// Who a request is shown things as: its viewer, or where `grants.json` cannot be read, the local
    /// Principal holding every grant (each call is then refused with the reason).
    fn shown_as(&self, context: &RequestContext<RoleServer>) -> Principal {
        self.viewer(context)
            .unwrap_or_else(|| Principal::local(crate::model::Grants::All, crate::model::Invoker::Mcp))
    }

    /// The tools a request is shown and may call.
    fn tools_for(&self, context: &RequestContext<RoleServer>) -> ToolMap {
        self.tools(Some(&self.shown_as(context)))
    }

    /// The tools of every tenant (`None`) or of one viewer.
    pub(crate) fn tools_of(&self, viewer: Option<&Principal>) -> ToolMap {
        self.tools(viewer)
    }

    pub(crate) fn runtime(&self) -> &Runtime {
        &self.runtime
    }
}

/// The Principal a request's bearer token authenticated, over HTTP (`hcpx serve` puts it in the request's parts);
/// `None` over stdio.
fn served(context: &RequestContext<RoleServer>) -> Option<&Authenticated> {
    context.extensions.get::<http::request::Parts>().and_then(|parts| parts.extensions.get::<Authenticated>())
}

/// An MCP `Tool` from its spec, every annotation set.
pub fn to_mcp_tool(t: &ToolSpec) -> Tool {
    let annotations = ToolAnnotations::with_title(t.title.clone())
        .read_only(t.hints.read_only)
        .destructive(t.hints.destructive)
        .idempotent(t.hints.idempotent)
        .open_world(t.hints.open_world);
    Tool::new(t.name.clone(), t.description.clone(), Arc::new(t.input_schema.clone()))
        .with_title(t.title.clone())
        .with_annotations(annotations)
}

impl ServerHandler for HcpServer {
    fn get_info(&self) -> ServerConfig {
        let capabilities = ServerCapabilities::builder()
            .enable_prompts()
            .enable_resources()
            .enable_tools()
            .enable_resources_list_changed()
            .enable_tool_list_changed()
            .enable_tasks()
            .build();
        ServerConfig::new(capabilities)
            .with_server_info(Implementation::new("hcpx", env!("CARGO_PKG_VERSION")))
            .with_instructions(if self.single_tool { super::skills::HOW_SINGLE } else { super::skills::HOW })
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        if self.single_tool {
            return Ok(ListToolsResult::with_all_items(vec![self.hcp_tool()]));
        }
        Ok(ListToolsResult::with_all_items(self.tools_for(&context).values().map(to_mcp_tool).collect()))
    }

    /// Once a client is initialized (over stdio or in one HTTP session), a change to the set of tools is
    /// announced to it with `notifications/tools/list_changed` until its transport closes.
    async fn on_initialized(&self, context: rmcp::service::NotificationContext<RoleServer>) {
        tokio::spawn(super::watch::watch(self.clone(), context.peer));
    }

    /// From 2026-07-28 on (no session), a client hears of tool and resource list changes on a
    /// `subscriptions/listen` stream instead.
    fn accepted_subscription_filter(
        &self,
        _requested: &rmcp::model::SubscriptionFilter,
    ) -> Option<rmcp::model::SubscriptionFilter> {
        Some(super::watch::accepted_filter())
    }

    async fn listen(&self, subscription: rmcp::service::SubscriptionContext) -> Result<(), McpError> {
        super::watch::listen(self, subscription).await;
        Ok(())
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, McpError> {
        let packs = super::skills::visible(&self.runtime, &self.shown_as(&context));
        Ok(ListResourcesResult::with_all_items(packs.iter().map(|p| super::skills::resource(p)).collect()))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, McpError> {
        super::skills::read(&self.runtime, &self.shown_as(&context), &request.uri).map(Into::into)
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, McpError> {
        Ok(ListPromptsResult::with_all_items(vec![super::skills::prompt()]))
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, McpError> {
        if request.name != super::skills::PROMPT {
            return Err(McpError::invalid_params(
                format!("unknown prompt {}; the one prompt is {}", request.name, super::skills::PROMPT),
                None,
            ));
        }
        let viewer = self.shown_as(&context);
        super::skills::get(&self.runtime, &viewer, request.arguments.as_ref(), self.single_tool)
            .map(Into::into)
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        if self.single_tool {
            return (name == super::single::TOOL).then(|| self.hcp_tool());
        }
        self.tools(None).get(name).map(to_mcp_tool)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let over_http = served(&context).is_some();
        let answer = self.answer_call(request, context).await;
        if over_http {
            return answer.map(|r| hide_host_paths(self.runtime.host_paths(), r));
        }
        answer
    }

    async fn get_task(
        &self,
        request: GetTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, McpError> {
        self.task_get(request, context).await
    }

    async fn cancel_task(
        &self,
        request: CancelTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.task_cancel(request, context).await
    }

    async fn update_task(
        &self,
        request: UpdateTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.task_update(request, context).await
    }
}

/// A tool's answer as a served caller (MCP over HTTP) reads it: the host's paths hidden (`call::hide_host_paths`).
fn hide_host_paths(paths: &crate::runtime::host_paths::HostPaths, r: CallToolResponse) -> CallToolResponse {
    match r {
        CallToolResponse::Complete(result) => {
            CallToolResponse::Complete(super::call::hide_host_paths(paths, result))
        }
        other => other,
    }
}

impl HcpServer {
    /// A tool call, answered as over stdio (`call_tool` hides the host's paths from a served caller).
    async fn answer_call(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        if self.single_tool {
            return self.call_hcp(request, context).await;
        }
        let tools = self.tools_for(&context);
        let Some(tool) = tools.get(request.name.as_ref()) else {
            return Err(McpError::invalid_params(
                format!(
                    "unknown tool {}; list the tools again (a pack may have been deactivated)",
                    request.name
                ),
                None,
            ));
        };
        let principal = match self.principal_for(&context, &tool.pack_id, &tool.verb_key) {
            Ok(p) => p,
            Err(refused) => return Ok(to_mcp_result(*refused).into()),
        };
        let args = request.arguments.unwrap_or_default();
        let (state, responses) = (request.request_state.as_deref(), request.input_responses.as_ref());
        let work = self.command_call(tool, principal, args, state, responses, &context);
        Ok(with_progress(work, &context, &tool.title).await)
    }

    /// One call of a command (its own tool, or `exec` of the one `hcp` tool). Where the command is confirm-gated
    /// and the client can ask its user, the gate is the person's answer: a call bringing `confirm: true` is asked
    /// about like any other, so a model cannot answer for the person (a call bringing an approver's
    /// `approval_id` goes to the pipeline, which checks it).
    async fn command_call(
        &self,
        tool: &ToolSpec,
        principal: Principal,
        args: serde_json::Map<String, serde_json::Value>,
        state: Option<&str>,
        responses: Option<&rmcp::model::InputResponses>,
        context: &RequestContext<RoleServer>,
    ) -> CallToolResponse {
        if let Some(state) = state {
            return self.resume(tool, principal, args, state, responses, context).await.into();
        }
        let brings_approval = args.contains_key(crate::args::APPROVAL_ARG);
        if tool.confirm
            && !brings_approval
            && context.client_capabilities().is_some_and(|c| c.elicitation.is_some())
        {
            return self.ask_the_person(tool, principal, args, context).await;
        }
        if tasks::takes_tasks(context) {
            return self.call_or_task(tool, principal, args, context).await;
        }
        let work = call(self.runtime.clone(), principal, tool, args, self.call_context(context));
        to_mcp_result(unless_cancelled(work, context, &tool.pack_id, &tool.verb_key).await).into()
    }

    /// A confirm-gated write from a client that can ask its user (elicitation). The call goes through the
    /// pipeline once, held for a person whatever `confirm` it brings, so arguments and grants are checked, the
    /// card is filled and the approval is bound to this exact call. The person is then asked: in the same request
    /// before protocol 2026-07-28, or through an `input_required` answer with a sealed request state from then
    /// on. Only their approval runs the call, once. Where the operator requires a person's approval
    /// (`human_approval`), the client's answer counts only where the operator said it is a person's
    /// ([`Self::answer_counts`]); elsewhere the call waits for an approver.
    async fn ask_the_person(
        &self,
        tool: &ToolSpec,
        principal: Principal,
        args: serde_json::Map<String, serde_json::Value>,
        context: &RequestContext<RoleServer>,
    ) -> CallToolResponse {
        use super::approval as ap;
        let held = CallContext { ask_person: true, ..self.call_context(context) };
        let first = call(self.runtime.clone(), principal.clone(), tool, args.clone(), held).await;
        let Some((id, required)) = pending_approval(&first) else { return to_mcp_result(first).into() };
        if required && !self.answer_counts(context) {
            return to_mcp_result(first).into();
        }
        let question = ap::question(tool, &first);
        let modern =
            context.protocol_version().is_some_and(|v| v >= rmcp::model::ProtocolVersion::V_2026_07_28);
        if modern {
            let store = self.runtime.store();
            let exp = store.approval(&id).map(|a| a.expires_at_ms).unwrap_or_else(|_| ap_now());
            return match ap::seal_state(store, &tool.name, &principal, &args, &id, exp) {
                Ok(state) => ap::input_required(question, state),
                Err(e) => {
                    to_mcp_result(ap::refused(tool, &format!("the request state could not be sealed: {e}")))
                        .into()
                }
            };
        }
        match context.peer.create_elicitation(question).await {
            Ok(r) => {
                let approve = ap::approves(r.action, r.content.as_ref());
                to_mcp_result(self.decided(tool, principal, args, &id, approve, context).await).into()
            }
            // The client said it could ask and then could not. An approval the operator requires still waits for
            // an approver; one only this face asked for is withdrawn, and nothing runs: the model's `confirm`
            // never stands in for the person.
            Err(_) if required => to_mcp_result(first).into(),
            Err(_) => {
                let _ = self.runtime.decide_approval(&principal, &id, false, ap::through(false));
                to_mcp_result(ap::not_approved(tool, "the client could not ask the person")).into()
            }
        }
    }

    /// The retry of an `input_required` answer: the request state must open for this very call, and the
    /// person's answer decides the approval it names; a state already used finds its approval decided.
    async fn resume(
        &self,
        tool: &ToolSpec,
        principal: Principal,
        args: serde_json::Map<String, serde_json::Value>,
        state: &str,
        responses: Option<&rmcp::model::InputResponses>,
        context: &RequestContext<RoleServer>,
    ) -> CallToolResult {
        use super::approval as ap;
        if !tool.confirm {
            return to_mcp_result(ap::refused(
                tool,
                "this tool asks no question, so it takes no request state; call it without one",
            ));
        }
        let id = match ap::open_state(self.runtime.store(), &tool.name, &principal, &args, state) {
            Ok(id) => id,
            Err(why) => return to_mcp_result(ap::refused(tool, &why)),
        };
        to_mcp_result(self.decided(tool, principal, args, &id, ap::answer_in(responses), context).await)
    }

    /// Records the person's answer on approval `id` and, when it approves, runs the call with it (once).
    async fn decided(
        &self,
        tool: &ToolSpec,
        principal: Principal,
        mut args: serde_json::Map<String, serde_json::Value>,
        id: &str,
        approve: bool,
        context: &RequestContext<RoleServer>,
    ) -> ToolAnswer {
        use super::approval as ap;
        let through = ap::through(self.answer_counts(context));
        if let Err(r) = self.runtime.decide_approval(&principal, id, approve, through) {
            return ap::refused(tool, r.denial.message.trim_start_matches("denied: "));
        }
        if !approve {
            return ap::not_approved(tool, ap::DECLINED);
        }
        for g in ["confirm", "apply"] {
            args.remove(g);
        }
        args.insert(crate::args::APPROVAL_ARG.into(), serde_json::Value::String(id.to_string()));
        call(self.runtime.clone(), principal, tool, args, self.call_context(context)).await
    }

    /// Whether, where the operator requires a person's approval, this client's answer is taken as one: never
    /// with `human_approval.elicitation: false`; over stdio (the store owner's own client) otherwise; over HTTP
    /// only for an approver Principal whose client the operator marked as a person's (`"person": true`). A
    /// store whose settings cannot be read takes none.
    fn answer_counts(&self, context: &RequestContext<RoleServer>) -> bool {
        let on = self
            .runtime
            .store()
            .sandbox()
            .is_ok_and(|s| s.human_approval.as_ref().is_none_or(|h| h.elicitation()));
        on && served(context).is_none_or(|who| who.approver && who.person)
    }

    /// A call of the one `hcp` tool: its `command` line, through the same pipeline.
    async fn call_hcp(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        if request.name != super::single::TOOL {
            return Err(McpError::invalid_params(
                format!("unknown tool {}; the one tool is hcp", request.name),
                None,
            ));
        }
        let Some(line) = request.arguments.as_ref().and_then(|a| a.get("command")).and_then(|c| c.as_str())
        else {
            return Err(McpError::invalid_params("the hcp tool takes {\"command\": \"…\"}", None));
        };
        let principal = match self.principal_for(&context, super::single::TOOL, "command") {
            Ok(p) => p,
            Err(refused) => return Ok(to_mcp_result(*refused).into()),
        };
        // An `exec` of a confirm-gated command takes the same gate as its own tool: the person's answer where
        // the client can ask.
        if let Some(Ok((pack, verb, args))) = super::single::exec_of(line) {
            let tools = self.tools_for(&context);
            if let Some(tool) = tools.values().find(|t| t.confirm && t.pack_id == pack && t.verb_key == verb)
            {
                let (state, responses) = (request.request_state.as_deref(), request.input_responses.as_ref());
                let work = self.command_call(tool, principal, args, state, responses, &context);
                return Ok(with_progress(work, &context, &tool.title).await);
            }
        }
        let work = super::single::run(self.runtime.clone(), principal, self.call_context(&context), line);
        let work = unless_cancelled(work, &context, super::single::TOOL, "command");
        Ok(to_mcp_result(with_progress(work, &context, "HCP packs").await).into())
    }

    /// The Principal of one call, or the `denied` result when it has none (grants.json unreadable). Over HTTP
    /// it is the one the request's bearer token authenticated (`hcpx serve` puts it in the request's parts).
    fn principal_for(
        &self,
        context: &RequestContext<RoleServer>,
        pack_id: &str,
        verb_key: &str,
    ) -> Result<Principal, Box<ToolAnswer>> {
        if let Some(who) = served(context) {
            return Ok(Principal { invoker: crate::model::Invoker::Mcp, ..who.principal.clone() });
        }
        (self.principal)().map_err(|why| {
            Box::new(super::call::answer(&ResultEnvelope::denied(pack_id, verb_key, Code::Denied, why)))
        })
    }
}

impl HcpServer {
    /// The context of one call: the server's, with the caller's span when calls are traced (`_meta.traceparent`
    /// of the request, else the HTTP request's `traceparent` header). A malformed one is ignored.
    pub(crate) fn call_context(&self, context: &RequestContext<RoleServer>) -> CallContext {
        let mut ctx = self.context.clone();
        if self.runtime.tracer().is_some() {
            ctx.trace = trace_parent(context);
        }
        ctx
    }
}

/// The caller's span: `_meta.traceparent` (and `tracestate`, SEP-414), else the HTTP request's headers.
fn trace_parent(context: &RequestContext<RoleServer>) -> Option<crate::runtime::trace::Parent> {
    use crate::runtime::trace::Parent;
    let from_meta =
        context.meta.get_traceparent().and_then(|tp| Parent::parse(tp, context.meta.get_tracestate()));
    from_meta.or_else(|| {
        let headers = &context.extensions.get::<http::request::Parts>()?.headers;
        let tp = headers.get("traceparent")?.to_str().ok()?;
        Parent::parse(tp, headers.get("tracestate").and_then(|v| v.to_str().ok()))
    })
}

/// The approval a held call waits for, if that is its answer, and whether the operator requires it
/// (`approval_pending`; `confirm_required` when only the face asked for it to be held).
fn pending_approval(a: &ToolAnswer) -> Option<(String, bool)> {
    let code = a.code();
    let required = code == Some(Code::ApprovalPending.as_str());
    if !required && code != Some(Code::ConfirmRequired.as_str()) {
        return None;
    }
    a.field("approval_id").map(|id| (id.to_string(), required))
}

fn ap_now() -> u64 {
    crate::store::approvals::now_ms()
}

/// `work`'s answer, or `cancelled` when the client cancels the request first (dropping `work` stops the
/// command: `exec_async` cancels it when dropped).
async fn unless_cancelled(
    work: impl std::future::Future<Output = ToolAnswer>,
    context: &RequestContext<RoleServer>,
    pack_id: &str,
    verb_key: &str,
) -> ToolAnswer {
    tokio::select! {
        a = work => a,
        () = context.ct.cancelled() => {
            let out = ResultEnvelope::denied(pack_id, verb_key, Code::Cancelled, "cancelled: the client cancelled the call");
            super::call::answer(&out)
        }
    }
}

/// Serves `runtime`'s activated packs over stdio until the client goes away. While it runs, a change to the
/// set of tools (a pack installed, activated, deactivated or removed) is announced with
/// `notifications/tools/list_changed` (`on_initialized`).
pub async fn serve_stdio(
    runtime: Arc<Runtime>,
    principal: PrincipalSource,
    context: CallContext,
    single_tool: bool,
) -> Result<(), McpServeError> {
    runtime.clone().look_after_tasks();
    let server = HcpServer::new(runtime, principal, context).single_tool(single_tool);
    let service = server.serve(rmcp::transport::stdio()).await.map_err(|e| McpServeError(e.to_string()))?;
    service.waiting().await.map(|_| ()).map_err(|e| McpServeError(e.to_string()))
}

/// Why the server could not start or ended abnormally.
#[derive(Debug, thiserror::Error)]
#[error("mcp: {0}")]
pub struct McpServeError(String);
