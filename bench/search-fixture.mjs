// The search section's stdio upstreams (bench/search.mjs), one JSON-RPC message per line:
//   node bench/search-fixture.mjs                  1,000 generated tools of a made-up SaaS estate
//                                                  (CRM, billing, Kubernetes, helpdesk, …: 30
//                                                  services, varied verbs, names, descriptions
//                                                  and argument names), one of them `echo`
//   node bench/search-fixture.mjs --recorded FILE  the tools of a real server's recorded
//                                                  tools/list (bench/search-capture.mjs wrote FILE)
// The same list on every start (a seeded shuffle). tools/call of `echo` answers its message;
// any other tool answers a short JSON text naming the tool and its arguments (nothing is done).
import { readFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';

export const CATALOGUE_SIZE = 1_000;

/** A small seeded PRNG (mulberry32), so the catalogue is the same on every start. */
function prng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

// Each service: its prefix, how it names tools (snake, kebab or camel), what it is called in a
// description, and its objects (singular, plural, id argument, fields, and verbs of its own).
const SERVICES = [
  ['crm', 'snake', 'the CRM', [['contact', 'contacts', ['email', 'phone', 'company_name', 'owner_id', 'lifecycle_stage'], [['merge', 'Merge two duplicate contact records into one, keeping the newer email and phone.'], ['enrich', 'Look up public firmographic data (industry, headcount, location) for a contact and fill in empty fields.']]], ['deal', 'deals', ['amount', 'stage', 'close_date', 'pipeline_id', 'owner_id'], [['move_stage', 'Move a deal to another pipeline stage, recording who moved it and why.']]], ['company', 'companies', ['domain', 'industry', 'employee_count', 'annual_revenue']], ['lead', 'leads', ['email', 'source', 'score', 'campaign_id'], [['convert', 'Turn a qualified lead into a contact, a company and optionally an open deal.']]], ['activity', 'activities', ['activity_type', 'due_date', 'contact_id', 'notes']]]],
  ['billing', 'snake', 'billing', [['invoice', 'invoices', ['customer_id', 'amount_due', 'currency', 'due_date', 'status'], [['void', 'Void an open invoice so it can no longer be paid; the customer is not notified.'], ['send_reminder', 'Email the customer a reminder about an unpaid or overdue invoice.'], ['finalize', 'Finalize a draft invoice: it gets a number and becomes payable.']]], ['subscription', 'subscriptions', ['customer_id', 'plan_id', 'quantity', 'trial_end', 'cancel_at_period_end'], [['cancel', 'Cancel a subscription now or at the end of the current billing period.'], ['change_plan', 'Upgrade or downgrade a subscription to another plan, with proration.']]], ['coupon', 'coupons', ['percent_off', 'amount_off', 'duration', 'max_redemptions'], [['apply', 'Apply a discount coupon to a customer or a subscription.']]], ['customer', 'customers', ['email', 'name', 'tax_id', 'default_payment_method']], ['credit_note', 'credit notes', ['invoice_id', 'amount', 'reason', 'memo']]]],
  ['k8s', 'kebab', 'the Kubernetes cluster', [['pod', 'pods', ['namespace', 'label_selector', 'node_name', 'phase'], [['logs', 'Stream or fetch the container logs of a pod, optionally of the previous crashed container.'], ['exec', 'Run a command inside a running container of a pod and return its output.']]], ['deployment', 'deployments', ['namespace', 'replicas', 'image', 'strategy'], [['scale', 'Change the number of replicas of a deployment.'], ['rollback', 'Roll a deployment back to its previous revision.'], ['restart', 'Trigger a rolling restart of every pod of a deployment.']]], ['service', 'services', ['namespace', 'service_type', 'port', 'selector']], ['config-map', 'config maps', ['namespace', 'data', 'immutable']], ['node', 'nodes', ['label_selector', 'unschedulable', 'taints'], [['drain', 'Cordon a node and evict its pods so it can be taken down for maintenance.']]]]],
  ['helpdesk', 'snake', 'the helpdesk', [['ticket', 'tickets', ['requester_email', 'subject', 'priority', 'status', 'assignee_id', 'tags'], [['escalate', 'Escalate a ticket to tier-two support and raise its priority.'], ['merge', 'Merge duplicate tickets from the same requester into one conversation.'], ['reply', 'Post a public reply or an internal note on a ticket.']]], ['macro', 'macros', ['title', 'actions', 'restricted_to_group']], ['agent', 'agents', ['email', 'group_id', 'role', 'availability']], ['sla_policy', 'SLA policies', ['first_reply_minutes', 'resolution_hours', 'priority']], ['satisfaction_rating', 'satisfaction ratings', ['ticket_id', 'score', 'comment']]]],
  ['calendar', 'camel', 'the calendar', [['event', 'events', ['title', 'start_time', 'end_time', 'attendees', 'location', 'recurrence'], [['rsvp', 'Accept, decline or tentatively accept an event invitation.'], ['findFreeSlots', 'Find times when all the given people are free within a date range.']]], ['calendar', 'calendars', ['name', 'time_zone', 'color']], ['room', 'meeting rooms', ['building', 'capacity', 'has_video'], [['book', 'Reserve a meeting room for a time slot.']]], ['reminder', 'reminders', ['event_id', 'minutes_before', 'method']]]],
  ['mail', 'snake', 'the mailbox', [['message', 'messages', ['from', 'to', 'subject', 'received_after', 'has_attachment'], [['send', 'Send an email message to one or more recipients, with optional CC, BCC and attachments.'], ['mark_read', 'Mark messages as read or unread.'], ['move', 'Move messages to another folder or label.']]], ['draft', 'drafts', ['to', 'subject', 'body', 'reply_to_message_id']], ['label', 'labels', ['name', 'color', 'visibility']], ['filter', 'filters', ['criteria', 'action', 'forward_to']], ['thread', 'threads', ['subject', 'participants', 'last_message_at']]]],
  ['inventory', 'snake', 'inventory', [['product', 'products', ['sku', 'title', 'price', 'category', 'barcode']], ['stock_level', 'stock levels', ['sku', 'warehouse_id', 'on_hand', 'reserved'], [['adjust', 'Adjust the on-hand quantity of an item in a warehouse, with a reason code.'], ['transfer', 'Move stock of an item from one warehouse to another.']]], ['warehouse', 'warehouses', ['name', 'address', 'capacity']], ['purchase_order', 'purchase orders', ['supplier_id', 'lines', 'expected_date', 'status'], [['receive', 'Record the goods of a purchase order as received into stock.']]], ['supplier', 'suppliers', ['name', 'contact_email', 'lead_time_days', 'currency']]]],
  ['hr', 'snake', 'the HR system', [['employee', 'employees', ['first_name', 'last_name', 'department', 'manager_id', 'start_date', 'job_title'], [['offboard', "Start an employee's offboarding: revoke access, schedule the exit interview, stop payroll."]]], ['time_off_request', 'time-off requests', ['employee_id', 'start_date', 'end_date', 'leave_type'], [['approve', 'Approve or reject a pending time-off request.']]], ['payslip', 'payslips', ['employee_id', 'period', 'gross_pay', 'net_pay']], ['job_opening', 'job openings', ['title', 'department', 'location', 'salary_range']], ['candidate', 'candidates', ['email', 'job_opening_id', 'stage', 'resume_url'], [['schedule_interview', 'Schedule an interview for a candidate with the hiring panel.']]]]],
  ['analytics', 'snake', 'product analytics', [['report', 'reports', ['metric', 'date_from', 'date_to', 'group_by'], [['run', 'Run a saved report now and return its rows.']]], ['dashboard', 'dashboards', ['title', 'widgets', 'shared_with']], ['segment', 'user segments', ['name', 'conditions', 'estimated_size']], ['funnel', 'funnels', ['steps', 'conversion_window_days', 'date_from']], ['event_definition', 'tracked event definitions', ['event_name', 'properties', 'verified']]]],
  ['storage', 'kebab', 'object storage', [['bucket', 'buckets', ['region', 'versioning', 'public_access_block']], ['object', 'objects', ['bucket', 'key', 'content_type', 'size_bytes'], [['presign', 'Create a time-limited signed URL to download or upload an object.'], ['copy', 'Copy an object to another key or bucket.']]], ['lifecycle-rule', 'lifecycle rules', ['bucket', 'prefix', 'expire_after_days', 'transition_storage_class']]]],
  ['ci', 'snake', 'CI/CD', [['pipeline', 'pipelines', ['repository', 'branch', 'status', 'triggered_by'], [['trigger', 'Start a new pipeline run on a branch or tag, with optional variables.'], ['cancel', 'Cancel a running pipeline and all its pending jobs.']]], ['job', 'jobs', ['pipeline_id', 'stage', 'status', 'runner_id'], [['retry', 'Retry a failed or cancelled job.'], ['log', 'Fetch the console output of a job.']]], ['artifact', 'build artifacts', ['job_id', 'path', 'expire_at']], ['runner', 'runners', ['tags', 'status', 'executor']], ['environment', 'deployment environments', ['name', 'url', 'protected'], [['promote', 'Promote the build deployed in one environment to the next (staging to production).']]]]],
  ['dns', 'snake', 'DNS', [['zone', 'DNS zones', ['domain', 'nameservers', 'dnssec']], ['record', 'DNS records', ['zone_id', 'record_type', 'name', 'value', 'ttl']], ['certificate', 'TLS certificates', ['domain', 'issuer', 'expires_at', 'auto_renew'], [['renew', 'Renew a TLS certificate before it expires.']]]]],
  ['monitoring', 'snake', 'monitoring', [['alert', 'alerts', ['severity', 'service', 'state', 'fired_at'], [['acknowledge', 'Acknowledge a firing alert so the on-call engineer stops being paged.'], ['silence', 'Silence matching alerts for a period, for example during maintenance.']]], ['incident', 'incidents', ['title', 'severity', 'commander_id', 'status', 'started_at'], [['resolve', 'Mark an incident as resolved and record the resolution summary.']]], ['monitor', 'monitors', ['query', 'threshold', 'notify', 'evaluation_window']], ['on_call_schedule', 'on-call schedules', ['team', 'rotation', 'time_zone'], [['who_is_on_call', 'Tell who is on call right now for a team or service.']]], ['metric', 'metrics', ['metric_name', 'tags', 'from', 'to', 'aggregation'], [['query', 'Query a time series metric over a time range with an aggregation.']]]]],
  ['chat', 'camel', 'the team chat', [['channel', 'channels', ['name', 'topic', 'is_private', 'members'], [['archive', 'Archive a channel so no one can post in it any more.'], ['invite', 'Invite people to a channel.']]], ['message', 'chat messages', ['channel_id', 'text', 'thread_ts', 'user_id'], [['post', 'Post a message to a channel or a direct message, optionally in a thread.'], ['pin', 'Pin a message to the top of a channel.']]], ['user', 'chat users', ['display_name', 'email', 'status_text', 'time_zone']], ['reminder', 'chat reminders', ['text', 'time', 'user_id']]]],
  ['wiki', 'snake', 'the wiki', [['page', 'wiki pages', ['space_key', 'title', 'body', 'parent_page_id', 'labels'], [['publish', 'Publish a draft page so everyone in the space can read it.'], ['move', 'Move a page under another parent page or into another space.']]], ['space', 'spaces', ['key', 'name', 'permissions']], ['comment', 'page comments', ['page_id', 'body', 'inline_anchor']], ['attachment', 'attachments', ['page_id', 'file_name', 'media_type']]]],
  ['payments', 'snake', 'payments', [['charge', 'charges', ['amount', 'currency', 'customer_id', 'payment_method', 'description'], [['capture', 'Capture an authorized charge that was created with capture disabled.']]], ['refund', 'refunds', ['charge_id', 'amount', 'reason']], ['payout', 'payouts', ['amount', 'destination_bank_account', 'arrival_date']], ['dispute', 'disputes', ['charge_id', 'reason', 'evidence', 'due_by'], [['submit_evidence', 'Submit evidence (receipts, shipping proof) to contest a chargeback.']]], ['balance_transaction', 'balance transactions', ['transaction_type', 'created_from', 'created_to']]]],
  ['shipping', 'kebab', 'shipping', [['shipment', 'shipments', ['order_id', 'carrier', 'service_level', 'weight_grams', 'destination_address'], [['track', 'Get the latest tracking status and scan history of a shipment.']]], ['label', 'shipping labels', ['shipment_id', 'format', 'carrier'], [['print', 'Buy and print a shipping label for a shipment.']]], ['rate-quote', 'rate quotes', ['origin_postcode', 'destination_postcode', 'weight_grams', 'dimensions']], ['return', 'returns', ['order_id', 'reason', 'refund_method']], ['pickup', 'carrier pickups', ['address', 'pickup_date', 'package_count']]]],
  ['maps', 'camel', 'maps', [['place', 'places', ['query', 'latitude', 'longitude', 'radius_meters', 'category']], ['route', 'routes', ['origin', 'destination', 'travel_mode', 'departure_time'], [['eta', 'Estimate the travel time between two places with current traffic.']]], ['address', 'addresses', ['street', 'city', 'postcode', 'country'], [['geocode', 'Turn a street address into latitude and longitude.'], ['validate', 'Check that a postal address exists and normalize its spelling.']]]]],
  ['db', 'snake', 'the database', [['table', 'tables', ['schema', 'table_name', 'columns', 'row_estimate'], [['describe', 'Describe the columns, types, indexes and constraints of a table.']]], ['query', 'saved queries', ['sql', 'parameters', 'timeout_ms'], [['run', 'Run a read-only SQL query and return the rows.'], ['explain', 'Show the execution plan of a SQL query.']]], ['index', 'indexes', ['table_name', 'columns', 'unique']], ['backup', 'backups', ['database', 'retention_days', 'status'], [['restore', 'Restore a database from a backup to a point in time.']]], ['migration', 'schema migrations', ['version', 'applied_at', 'checksum'], [['apply', 'Apply the pending schema migrations.']]]]],
  ['iam', 'snake', 'identity and access', [['user', 'users', ['email', 'display_name', 'mfa_enabled', 'last_login_at'], [['suspend', 'Suspend a user account and end its sessions.'], ['reset_password', 'Send a password reset link to a user.']]], ['role', 'roles', ['name', 'permissions', 'description']], ['group', 'groups', ['name', 'members', 'owner_id'], [['add_member', 'Add a user to a group.']]], ['api_key', 'API keys', ['name', 'scopes', 'expires_at'], [['rotate', 'Issue a new secret for an API key and revoke the old one after a grace period.']]], ['audit_log', 'audit log entries', ['actor', 'action', 'resource', 'occurred_after']]]],
  ['flags', 'kebab', 'feature flags', [['flag', 'feature flags', ['key', 'environment', 'enabled', 'rules'], [['toggle', 'Turn a feature flag on or off in an environment.']]], ['experiment', 'A/B experiments', ['flag_key', 'variants', 'metric', 'traffic_percent'], [['results', 'Show the results of an A/B experiment with confidence intervals.']]], ['rollout', 'percentage rollouts', ['flag_key', 'percentage', 'environment']]]],
  ['cms', 'snake', 'the content management system', [['article', 'articles', ['title', 'slug', 'body', 'author_id', 'publish_at', 'category'], [['schedule', 'Schedule an article to be published at a later time.']]], ['asset', 'media assets', ['file_name', 'alt_text', 'folder']], ['author', 'authors', ['name', 'bio', 'avatar_url']], ['category', 'categories', ['name', 'parent_id', 'slug']]]],
  ['survey', 'snake', 'surveys', [['survey', 'surveys', ['title', 'questions', 'audience', 'closes_at'], [['send', 'Send a survey to a list of recipients by email.']]], ['response', 'survey responses', ['survey_id', 'respondent_email', 'submitted_after', 'answers']], ['question', 'survey questions', ['survey_id', 'text', 'question_type', 'choices']]]],
  ['finance', 'snake', 'accounting', [['expense', 'expense reports', ['employee_id', 'amount', 'currency', 'category', 'receipt_url'], [['approve', 'Approve or reject a submitted expense report.']]], ['budget', 'budgets', ['department', 'fiscal_year', 'amount', 'spent']], ['journal_entry', 'journal entries', ['account_code', 'debit', 'credit', 'memo', 'posted_on']], ['vendor_bill', 'vendor bills', ['vendor_id', 'amount', 'due_date', 'status'], [['pay', 'Schedule payment of a vendor bill.']]], ['exchange_rate', 'exchange rates', ['base_currency', 'quote_currency', 'on_date']]]],
  ['projects', 'snake', 'project tracking', [['task', 'tasks', ['project_id', 'title', 'assignee_id', 'due_date', 'priority', 'status'], [['assign', 'Assign a task to a person.'], ['complete', 'Mark a task as done.']]], ['milestone', 'milestones', ['project_id', 'title', 'due_date']], ['sprint', 'sprints', ['board_id', 'goal', 'start_date', 'end_date'], [['close', 'Close the active sprint and move unfinished tasks to the next one.']]], ['time_entry', 'time entries', ['task_id', 'user_id', 'minutes', 'spent_on']], ['project', 'projects', ['name', 'owner_id', 'visibility', 'template']]]],
  ['social', 'camel', 'social media publishing', [['post', 'social posts', ['network', 'text', 'media_urls', 'link'], [['schedule', 'Schedule a post for a social network at a given time.']]], ['mention', 'brand mentions', ['network', 'keyword', 'sentiment', 'since']], ['account', 'connected social accounts', ['network', 'handle', 'followers']]]],
  ['translate', 'snake', 'translation', [['text', 'texts', ['text', 'source_language', 'target_language', 'formality'], [['detect_language', 'Detect the language a text is written in.']]], ['glossary', 'glossaries', ['name', 'language_pair', 'entries']], ['document', 'documents', ['file_url', 'target_language', 'preserve_formatting']]]],
  ['vault', 'kebab', 'the secrets vault', [['secret', 'secrets', ['path', 'value', 'version', 'ttl'], [['rotate', 'Rotate a secret: generate a new value and keep the previous version readable for a while.']]], ['policy', 'vault policies', ['name', 'rules']], ['lease', 'leases', ['lease_id', 'ttl', 'renewable'], [['revoke', 'Revoke a lease so its credentials stop working at once.']]]]],
  ['marketing', 'snake', 'email marketing', [['campaign', 'email campaigns', ['subject', 'audience_id', 'send_at', 'template_id'], [['send_test', 'Send a test copy of a campaign to a few addresses.']]], ['audience', 'audiences', ['name', 'member_count', 'double_opt_in']], ['subscriber', 'subscribers', ['email', 'audience_id', 'status', 'merge_fields'], [['unsubscribe', 'Unsubscribe an address from an audience.']]], ['template', 'email templates', ['name', 'html', 'category']]]],
  ['weather', 'camel', 'the weather service', [['forecast', 'forecasts', ['latitude', 'longitude', 'days', 'units']], ['observation', 'current observations', ['station_id', 'latitude', 'longitude']], ['alert', 'severe weather alerts', ['region', 'severity', 'event_type']]]],
];

const VERBS = {
  list: (o, s, f) => [`List ${o.plural} in ${s}, newest first. Filter by ${f[0].replace(/_/g, ' ')} or ${f[1]?.replace(/_/g, ' ') ?? 'creation date'}; paginate with cursor.`, { ...filters(f.slice(0, 3)), limit: int('Page size, 1-100.'), cursor: str('Cursor from the previous page.') }, []],
  get: (o, s, f) => [`Get one ${o.name} from ${s} by its id, with its ${f.slice(0, 3).map((x) => x.replace(/_/g, ' ')).join(', ')}.`, { [o.id]: str(`The ${o.name}'s id.`) }, [o.id]],
  create: (o, s, f) => [`Create a new ${o.name} in ${s}.`, fields(f), f.slice(0, 2)],
  update: (o, s, f) => [`Update fields of an existing ${o.name}; omitted fields are left as they are.`, { [o.id]: str(`The ${o.name} to change.`), ...fields(f.slice(0, 4)) }, [o.id]],
  delete: (o, s) => [`Permanently delete a ${o.name} from ${s}. This cannot be undone.`, { [o.id]: str(`The ${o.name} to delete.`), confirm: bool('Must be true.') }, [o.id, 'confirm']],
  search: (o, s, f) => [`Full-text search across ${o.plural} (matches ${f.slice(0, 2).map((x) => x.replace(/_/g, ' ')).join(' and ')}).`, { query: str('Words to look for.'), limit: int('Most results.') }, ['query']],
  export: (o, s) => [`Export ${o.plural} from ${s} as CSV or JSON for a date range.`, { format: { type: 'string', enum: ['csv', 'json'] }, date_from: date('Start of the range.'), date_to: date('End of the range.') }, ['format']],
  count: (o, s, f) => [`Count ${o.plural}, optionally grouped by ${f[0].replace(/_/g, ' ')}.`, { group_by: str('Field to group by.'), ...filters(f.slice(1, 2)) }, []],
  history: (o) => [`Show the change history of a ${o.name}: who changed what and when.`, { [o.id]: str(`The ${o.name}.`), limit: int('Most entries.') }, [o.id]],
  bulk_update: (o, s, f) => [`Apply the same change to many ${o.plural} at once.`, { ids: { type: 'array', items: { type: 'string' }, description: `${o.name} ids` }, ...fields(f.slice(0, 2)) }, ['ids']],
  archive: (o) => [`Archive a ${o.name}: it is hidden from lists but can be restored.`, { [o.id]: str(`The ${o.name}.`) }, [o.id]],
  watch: (o) => [`Subscribe to change notifications for a ${o.name} (webhook or email).`, { [o.id]: str(`The ${o.name}.`), webhook_url: { type: 'string', format: 'uri' } }, [o.id]],
};

const str = (description) => ({ type: 'string', description });
const int = (description) => ({ type: 'integer', minimum: 1, maximum: 100, description });
const bool = (description) => ({ type: 'boolean', description });
const date = (description) => ({ type: 'string', format: 'date', description });

/** A JSON schema for a field, guessed from its name. */
function field(name) {
  const words = name.replace(/_/g, ' ');
  if (/(_at|_date|_on|_time|^from$|^to$|_after|_by|^since$|closes_at|_end)$/.test(name)) return { type: 'string', format: name.endsWith('date') || name.endsWith('_on') ? 'date' : 'date-time', description: `The ${words}.` };
  if (/(amount|price|count|replicas|capacity|score|quantity|minutes|hours|days|ttl|port|percent|grams|bytes|meters|latitude|longitude|debit|credit|pay|revenue|spent|followers|size|threshold|limit)/.test(name)) return { type: 'number', description: `The ${words}.` };
  if (/^(is_|has_|auto_|cancel_at|versioning|immutable|unschedulable|protected|verified|unique|enabled|mfa|dnssec|renewable|double_opt_in|preserve)/.test(name)) return { type: 'boolean', description: `Whether ${words}.` };
  if (/(attendees|tags|members|lines|steps|widgets|questions|choices|variants|scopes|permissions|participants|nameservers|media_urls|taints|columns|entries|actions|rules|conditions)$/.test(name)) return { type: 'array', items: { type: 'string' }, description: `The ${words}.` };
  if (/email/.test(name)) return { type: 'string', format: 'email', description: `The ${words}.` };
  if (/(url|link)$/.test(name)) return { type: 'string', format: 'uri', description: `The ${words}.` };
  if (name === 'currency' || name.endsWith('_currency')) return { type: 'string', pattern: '^[A-Z]{3}$', description: 'ISO 4217 code.' };
  return { type: 'string', description: `The ${words}.` };
}
const fields = (names) => Object.fromEntries(names.map((n) => [n, field(n)]));
const filters = (names) => Object.fromEntries(names.map((n) => [n, { ...field(n), description: `Only those with this ${n.replace(/_/g, ' ')}.` }]));

/** A tool name in a service's style: crm_list_contacts, k8s-scale-deployment, calendarListEvents. */
function named(style, prefix, verb, object) {
  const words = [prefix, ...verb.split(/[_-]|(?=[A-Z])/), ...object.split(/[_-]/)].map((w) => w.toLowerCase());
  if (style === 'kebab') return words.join('-');
  if (style === 'camel') return words.map((w, i) => (i ? w[0].toUpperCase() + w.slice(1) : w)).join('');
  return words.join('_');
}

/** The 1,000 tools: `echo`, then a seeded pick of every service's objects and verbs. */
export function catalogue() {
  const random = prng(1_000);
  const candidates = [];
  const annotations = { get: { readOnlyHint: true }, list: { readOnlyHint: true }, search: { readOnlyHint: true }, count: { readOnlyHint: true }, history: { readOnlyHint: true }, export: { readOnlyHint: true }, delete: { destructiveHint: true } };
  for (const [prefix, style, system, objects] of SERVICES) {
    for (const [name, plural, f, own = []] of objects) {
      const singular = name.replace(/-/g, '_');
      const o = { name: singular.replace(/_/g, ' '), plural, id: `${singular}_id` };
      for (const [verb, make] of Object.entries(VERBS)) {
        const [description, properties, required] = make(o, system, f);
        const object = verb === 'list' || verb === 'search' || verb === 'export' || verb === 'count' || verb === 'bulk_update' ? plural.replace(/ /g, '_').replace(/[^A-Za-z0-9_]/g, '') : name;
        candidates.push({ name: named(style, prefix, verb, object), title: `${verb[0].toUpperCase()}${verb.slice(1).replace(/_/g, ' ')} ${verb === 'list' || verb === 'search' || verb === 'export' || verb === 'count' || verb === 'bulk_update' ? plural : o.name}`, description, inputSchema: { type: 'object', properties, required }, ...(annotations[verb] ? { annotations: annotations[verb] } : {}), own: false });
      }
      for (const [verb, description] of own) {
        const properties = { [o.id]: str(`The ${o.name}.`), ...fields(f.slice(0, 2 + Math.floor(random() * 3))) };
        candidates.push({ name: named(style, prefix, verb, name), description, inputSchema: { type: 'object', properties, required: [o.id] }, own: true });
      }
    }
  }
  // Every service verb of its own (the realistic, specific ones) stays; the generic verbs fill
  // the rest, chosen by the seeded shuffle.
  const own = candidates.filter((c) => c.own);
  const taken = new Set(own.map((c) => c.name));
  const generic = candidates.filter((c) => !c.own && !taken.has(c.name));
  for (let i = generic.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [generic[i], generic[j]] = [generic[j], generic[i]];
  }
  const echo = { name: 'echo', description: 'Echo the message back unchanged (a connectivity check).', inputSchema: { type: 'object', properties: { message: { type: 'string' } }, required: ['message'] }, annotations: { readOnlyHint: true } };
  const chosen = [echo, ...own, ...generic].slice(0, CATALOGUE_SIZE);
  const names = new Set(chosen.map((t) => t.name));
  if (names.size !== CATALOGUE_SIZE) throw new Error(`the catalogue has ${names.size} distinct names, not ${CATALOGUE_SIZE}`);
  return chosen.map(({ own: _, ...tool }) => tool);
}

function serve(tools, serverInfo) {
  createInterface({ input: process.stdin }).on('line', (line) => {
    if (!line) return;
    const message = JSON.parse(line);
    if (message.id === undefined || message.method === undefined) return;
    let result;
    switch (message.method) {
      case 'initialize':
        result = { protocolVersion: message.params?.protocolVersion ?? '2025-06-18', capabilities: { tools: {} }, serverInfo };
        break;
      case 'ping':
        result = {};
        break;
      case 'tools/list':
        result = { tools };
        break;
      case 'tools/call': {
        const { name, arguments: args = {} } = message.params ?? {};
        if (name === 'echo') result = { content: [{ type: 'text', text: String(args.message ?? '') }] };
        else if (tools.some((t) => t.name === name)) result = { content: [{ type: 'text', text: JSON.stringify({ tool: name, arguments: args, note: 'bench fixture: nothing was done' }) }] };
        else result = { content: [{ type: 'text', text: `unknown tool ${name}` }], isError: true };
        break;
      }
    }
    const reply = result === undefined ? { jsonrpc: '2.0', id: message.id, error: { code: -32601, message: 'Method not found' } } : { jsonrpc: '2.0', id: message.id, result };
    process.stdout.write(`${JSON.stringify(reply)}\n`);
  }).on('close', () => process.exit(0));
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const { values } = parseArgs({ options: { recorded: { type: 'string' } } });
  if (values.recorded) {
    const recording = JSON.parse(readFileSync(values.recorded, 'utf8'));
    serve(recording.tools, { name: `${recording.server?.name ?? 'recorded'} (recorded)`, version: recording.server?.version ?? '0' });
  } else {
    serve(catalogue(), { name: 'bench-search-catalogue', version: '1' });
  }
}
