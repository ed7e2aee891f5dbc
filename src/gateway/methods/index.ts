import type { AnyMethod } from "../context.js";
import { agentMethod, agentWaitMethod } from "./agent.js";
import { agentEventsMethod } from "./agent-events.js";
import { execApprovalListMethod, execApprovalResolveMethod } from "./approvals.js";
import { auditListMethod } from "./audit.js";
import { chatAbortMethod, chatHistoryMethod, chatSendMethod } from "./chat.js";
import { chatMetadataMethod, chatStartupMethod } from "./chat-views.js";
import { configSchemaMethod } from "./config-schema.js";
import { configApplyMethod, configPatchMethod } from "./config-write.js";
import {
  cronAddMethod,
  cronListMethod,
  cronRemoveMethod,
  cronRunMethod,
  cronRunsMethod,
  cronUpdateMethod,
} from "./cron.js";
import { diagnosticsListMethod } from "./diagnostics.js";
import { execApprovalsGetMethod, execApprovalsSetMethod } from "./exec-policy.js";
import {
  agentIdentityGetMethod,
  agentsListMethod,
  commandsListMethod,
  configGetMethod,
  modelsAuthClearMethod,
  modelsAuthStatusMethod,
  modelsListMethod,
  statusMethod,
  updateStatusMethod,
} from "./gateway-info.js";
import { healthMethod } from "./health.js";
import { logsTailMethod } from "./logs.js";
import { mcpStatusMethod } from "./mcp.js";
import { cronStatusMethod, pluginApprovalListMethod, questionListMethod } from "./pending-lists.js";
import { runsListMethod } from "./runs.js";
import {
  sessionsCreateMethod,
  sessionsDescribeMethod,
  sessionsPatchMethod,
  sessionsResolveMethod,
} from "./session-admin.js";
import { sessionsDeleteMethod, sessionsGetMethod, sessionsListMethod, sessionsResetMethod } from "./sessions.js";
import {
  pluginsListMethod,
  pluginsSetEnabledMethod,
  skillsStatusMethod,
  skillsUpdateMethod,
} from "./skills-plugins.js";
import {
  sessionsMessagesSubscribeMethod,
  sessionsMessagesUnsubscribeMethod,
  sessionsObserverVisibilityMethod,
  sessionsSubscribeMethod,
  sessionsUnsubscribeMethod,
} from "./subscriptions.js";
import { budgetApprovalListMethod, budgetApprovalResolveMethod, usageSummaryMethod } from "./usage.js";

/** Every method the gateway serves, by name. `hello-ok.features.methods` is built from the same list. */
export function methodRegistry(): Map<string, AnyMethod> {
  const all = [
    healthMethod,
    agentMethod,
    agentWaitMethod,
    chatSendMethod,
    chatAbortMethod,
    chatHistoryMethod,
    sessionsListMethod,
    sessionsGetMethod,
    sessionsResetMethod,
    sessionsDeleteMethod,
    execApprovalListMethod,
    execApprovalResolveMethod,
    auditListMethod,
    cronListMethod,
    cronAddMethod,
    cronRemoveMethod,
    cronRunMethod,
    runsListMethod,
    sessionsSubscribeMethod,
    sessionsUnsubscribeMethod,
    sessionsMessagesSubscribeMethod,
    sessionsMessagesUnsubscribeMethod,
    sessionsObserverVisibilityMethod,
    sessionsCreateMethod,
    sessionsResolveMethod,
    sessionsDescribeMethod,
    sessionsPatchMethod,
    chatStartupMethod,
    chatMetadataMethod,
    agentsListMethod,
    agentIdentityGetMethod,
    modelsListMethod,
    modelsAuthStatusMethod,
    modelsAuthClearMethod,
    statusMethod,
    updateStatusMethod,
    commandsListMethod,
    configGetMethod,
    configPatchMethod,
    configApplyMethod,
    cronStatusMethod,
    pluginApprovalListMethod,
    questionListMethod,
    agentEventsMethod,
    diagnosticsListMethod,
    mcpStatusMethod,
    cronUpdateMethod,
    cronRunsMethod,
    logsTailMethod,
    configSchemaMethod,
    skillsStatusMethod,
    skillsUpdateMethod,
    pluginsListMethod,
    pluginsSetEnabledMethod,
    execApprovalsGetMethod,
    execApprovalsSetMethod,
    usageSummaryMethod,
    budgetApprovalListMethod,
    budgetApprovalResolveMethod,
  ];
  return new Map(all.map((m) => [m.name, m]));
}
