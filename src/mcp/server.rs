//! `hcpx mcp`: the activated packs as MCP tools over stdio (rmcp). The handler only turns MCP requests into
//! envelopes and result envelopes into tool results; the pipeline decides everything else.

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation, ListToolsResult,
    PaginatedRequestParams, ProgressNotificationParam, ServerCapabilities, ServerConfig, Tool,
    ToolAnnotations,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, Peer, RoleServer, ServerHandler, ServiceExt};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use super::call::{call, ToolAnswer};
use super::tools::{activated_tools, ToolSpec};
use crate::model::{Code, Principal, ResultEnvelope};
use crate::runtime::{CallContext, Runtime};
use crate::store::principals::{Authenticated, LOCAL_TENANT};

/// How often the store is looked at for packs installed, activated or removed while the server runs.
const WATCH_EVERY: Duration = Duration::from_millis(300);

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
}

impl HcpServer {
    pub fn new(runtime: Arc<Runtime>, principal: PrincipalSource, context: CallContext) -> HcpServer {
        HcpServer { runtime, principal, context, single_tool: false }
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

    /// The tools as they are now for `tenant` (`None`: any tenant's), read from the store each time, so an
    /// install shows at once.
    fn tools(&self, tenant: Option<&str>) -> BTreeMap<String, ToolSpec> {
        activated_tools(&self.runtime, tenant)
    }

    /// The tenant of a request: the Principal its bearer token authenticated over HTTP, else the local one.
    fn tenant_of(&self, context: &RequestContext<RoleServer>) -> String {
        served(context).map_or_else(|| LOCAL_TENANT.to_string(), |who| who.principal.tenant.clone())
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

fn to_mcp_result(a: ToolAnswer) -> CallToolResult {
    let mut r = if a.is_error {
        CallToolResult::structured_error(serde_json::Value::Object(a.structured))
    } else {
        CallToolResult::structured(serde_json::Value::Object(a.structured))
    };
    r.content = vec![ContentBlock::text(a.text)];
    r
}

impl ServerHandler for HcpServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().enable_tool_list_changed().build())
            .with_server_info(Implementation::new("hcpx", env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "Each tool is one command of an activated HCP pack (pack__verb_key). A denial comes back as an \
                 error result with its code; a confirm-gated write is refused until the person approves the \
                 card it shows, then called again with \"confirm\": true.",
            )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        if self.single_tool {
            return Ok(ListToolsResult::with_all_items(vec![self.hcp_tool()]));
        }
        let tenant = self.tenant_of(&context);
        Ok(ListToolsResult::with_all_items(self.tools(Some(&tenant)).values().map(to_mcp_tool).collect()))
    }

    /// Once a client is initialized (over stdio or in one HTTP session), a change to the set of tools is
    /// announced to it with `notifications/tools/list_changed` until its transport closes.
    async fn on_initialized(&self, context: rmcp::service::NotificationContext<RoleServer>) {
        tokio::spawn(watch_tools(self.clone(), context.peer));
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
        if self.single_tool {
            return self.call_hcp(request, context).await;
        }
        let tools = self.tools(Some(&self.tenant_of(&context)));
        let Some(tool) = tools.get(request.name.as_ref()) else {
            return Err(McpError::invalid_params(
                format!(
                    "unknown tool {}; list the tools again (a pack may have been deactivated)",
                    request.name
                ),
                None,
            ));
        };
        if let Some(token) = context.meta.get_progress_token() {
            let _ = context
                .peer
                .notify_progress(ProgressNotificationParam::new(token, 0.0).with_message(tool.title.clone()))
                .await;
        }
        let principal = match self.principal_for(&context, &tool.pack_id, &tool.verb_key) {
            Ok(p) => p,
            Err(refused) => return Ok(to_mcp_result(refused).into()),
        };
        let args = request.arguments.unwrap_or_default();
        if let Some(state) = request.request_state.as_deref() {
            return Ok(self
                .resume(tool, principal, args, state, request.input_responses.as_ref())
                .await
                .into());
        }
        let gate = |a: &serde_json::Map<String, serde_json::Value>| {
            ["confirm", "apply"].iter().any(|k| a.get(*k) == Some(&serde_json::Value::Bool(true)))
        };
        let brings_approval = args.contains_key(crate::args::APPROVAL_ARG);
        if tool.confirm
            && !brings_approval
            && context.client_capabilities().is_some_and(|c| c.elicitation.is_some())
        {
            let ask_person = !gate(&args);
            return Ok(self.ask_the_person(tool, principal, args, ask_person, &context).await);
        }
        let work = call(self.runtime.clone(), principal, tool, args, self.context.clone());
        Ok(to_mcp_result(unless_cancelled(work, &context, &tool.pack_id, &tool.verb_key).await).into())
    }
}

impl HcpServer {
    /// A confirm-gated write from a client that can ask its user (elicitation). The call goes through the
    /// pipeline once, held for a person (`ask_person` when it brings no `confirm`; the operator's
    /// `human_approval` otherwise), so arguments and grants are checked, the card is filled and the approval is
    /// bound to this exact call. The person is then asked: in the same request before protocol 2026-07-28, or
    /// through an `input_required` answer with a sealed request state from then on. Only their approval runs
    /// the call, once.
    async fn ask_the_person(
        &self,
        tool: &ToolSpec,
        principal: Principal,
        args: serde_json::Map<String, serde_json::Value>,
        ask_person: bool,
        context: &RequestContext<RoleServer>,
    ) -> CallToolResponse {
        use super::approval as ap;
        let held = CallContext { ask_person, ..self.context.clone() };
        let first = call(self.runtime.clone(), principal.clone(), tool, args.clone(), held).await;
        let Some(id) = pending_approval(&first) else { return to_mcp_result(first).into() };
        // The operator may require an approver's decision, never an MCP client's answer.
        if !self.elicitation_counts() {
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
        let asked = context.peer.create_elicitation(question).await;
        match asked {
            Ok(r) => to_mcp_result(
                self.decided(tool, principal, args, &id, ap::approves(r.action, r.content.as_ref())).await,
            )
            .into(),
            // The client said it could ask and then could not: the approval is withdrawn, and the call answers as
            // the pipeline does without a person at hand (the card and the instruction, or a pending approval
            // when the operator requires one).
            Err(_) => {
                let _ = self.runtime.decide_approval(&principal, &id, false, ap::THROUGH);
                let out = call(self.runtime.clone(), principal, tool, args, self.context.clone()).await;
                to_mcp_result(out).into()
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
        to_mcp_result(self.decided(tool, principal, args, &id, ap::answer_in(responses)).await)
    }

    /// Records the person's answer on approval `id` and, when it approves, runs the call with it (once).
    async fn decided(
        &self,
        tool: &ToolSpec,
        principal: Principal,
        mut args: serde_json::Map<String, serde_json::Value>,
        id: &str,
        approve: bool,
    ) -> ToolAnswer {
        use super::approval as ap;
        if let Err(r) = self.runtime.decide_approval(&principal, id, approve, ap::THROUGH) {
            return ap::refused(tool, r.denial.message.trim_start_matches("denied: "));
        }
        if !approve {
            return ap::not_approved(tool);
        }
        for g in ["confirm", "apply"] {
            args.remove(g);
        }
        args.insert(crate::args::APPROVAL_ARG.into(), serde_json::Value::String(id.to_string()));
        call(self.runtime.clone(), principal, tool, args, self.context.clone()).await
    }

    /// Whether an MCP client's answer counts as the person's approval (`human_approval.elicitation`, default
    /// yes). A store whose settings cannot be read counts none.
    fn elicitation_counts(&self) -> bool {
        self.runtime
            .store()
            .sandbox()
            .is_ok_and(|s| s.human_approval.as_ref().is_none_or(|h| h.elicitation()))
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
            Err(refused) => return Ok(to_mcp_result(refused).into()),
        };
        let work = super::single::run(self.runtime.clone(), principal, self.context.clone(), line);
        Ok(to_mcp_result(unless_cancelled(work, &context, super::single::TOOL, "command").await).into())
    }

    /// The Principal of one call, or the `denied` result when it has none (grants.json unreadable). Over HTTP
    /// it is the one the request's bearer token authenticated (`hcpx serve` puts it in the request's parts).
    fn principal_for(
        &self,
        context: &RequestContext<RoleServer>,
        pack_id: &str,
        verb_key: &str,
    ) -> Result<Principal, ToolAnswer> {
        if let Some(who) = served(context) {
            return Ok(Principal { invoker: crate::model::Invoker::Mcp, ..who.principal.clone() });
        }
        (self.principal)()
            .map_err(|why| super::call::answer(&ResultEnvelope::denied(pack_id, verb_key, Code::Denied, why)))
    }
}

/// The approval a held call waits for (`approval_pending`, or `confirm_required` when only the face asked for
/// it to be held), if that is its answer.
fn pending_approval(a: &ToolAnswer) -> Option<String> {
    let code = a.structured.get("code").and_then(|c| c.as_str());
    if code != Some(Code::ApprovalPending.as_str()) && code != Some(Code::ConfirmRequired.as_str()) {
        return None;
    }
    a.structured.get("approval_id").and_then(|v| v.as_str()).map(String::from)
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
    let server = HcpServer::new(runtime, principal, context).single_tool(single_tool);
    let service = server.serve(rmcp::transport::stdio()).await.map_err(|e| McpServeError(e.to_string()))?;
    service.waiting().await.map(|_| ()).map_err(|e| McpServeError(e.to_string()))
}

/// Why the server could not start or ended abnormally.
#[derive(Debug, thiserror::Error)]
#[error("mcp: {0}")]
pub struct McpServeError(String);

async fn watch_tools(server: HcpServer, peer: Peer<RoleServer>) {
    // What the tools follow from: each pack's id, activation and install. Reading it is one stat of
    // state.json (the store's read cache); the tools are rebuilt only when it changed.
    let installs = |s: &HcpServer| {
        s.runtime.store().state().ok().map(|st| {
            st.packs
                .iter()
                .map(|(id, p)| (id.clone(), p.activated, p.tenants.clone(), p.installed_at.clone()))
                .collect::<Vec<_>>()
        })
    };
    let names = |s: &HcpServer| s.tools(None).into_keys().collect::<Vec<_>>();
    let (mut seen_installs, mut seen_names) = (installs(&server), names(&server));
    loop {
        tokio::time::sleep(WATCH_EVERY).await;
        if peer.is_transport_closed() {
            return;
        }
        let now = installs(&server);
        if now == seen_installs {
            continue;
        }
        seen_installs = now;
        let now = names(&server);
        if now != seen_names {
            seen_names = now;
            if peer.notify_tool_list_changed().await.is_err() {
                return;
            }
        }
    }
}
