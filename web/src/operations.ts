import { graphql } from './gql/index.ts';

// The viewer's operations. The build types them with GraphQL Code Generator and
// registers them by hash (dist/web/persisted-documents.json); the contract
// tests run them against the API with the rest of the client operations.

export const ViewerSessionQuery = graphql(`
  query ViewerSession {
    viewer {
      actor
      permissions
    }
  }
`);

export const RunRowFragment = graphql(`
  fragment ViewerRunRow on Run {
    id
    uuid
    status
    terminationReason
    configuration
    owner
    createdAt
    finishedAt
    estimatedCost
    toolOutcomeCounts {
      ok
      failed
      cancelled
      total
    }
  }
`);

export const RunsPageQuery = graphql(`
  query ViewerRunsPage($first: Int!, $after: String, $filter: RunFilter, $waiting: RunFilter!) {
    waiting: runs(first: 100, filter: $waiting) {
      totalCount
      edges {
        node {
          ...ViewerRunRow
        }
      }
    }
    runs(first: $first, after: $after, filter: $filter) {
      totalCount
      pageInfo {
        hasNextPage
        endCursor
      }
      edges {
        node {
          ...ViewerRunRow
        }
      }
    }
  }
`);

/** The configurations and owners of the last year's runs, offered as the filters are typed. */
export const RunFilterNamesQuery = graphql(`
  query ViewerRunFilterNames($since: DateTime!) {
    configurations: runStats(groupBy: [CONFIGURATION], first: 500, filter: { createdAfter: $since }) {
      groups {
        configuration
      }
    }
    owners: runStats(groupBy: [OWNER], first: 500, filter: { createdAfter: $since }) {
      groups {
        owner
      }
    }
  }
`);

export const TimelineRowFragment = graphql(`
  fragment ViewerTimelineRow on TimelineEntry {
    sequence
    occurredAt
    kind
    round
    durationMs
    outcome
    detail
    step {
      id
      failureCode
    }
  }
`);

export const RunPageQuery = graphql(`
  query ViewerRunPage($uuid: String!, $locale: Locale!) {
    run(uuid: $uuid) {
      ...ViewerRunHeader
      timelinePage(first: 500, locale: $locale) {
        edges {
          node {
            ...ViewerTimelineRow
          }
        }
        pageInfo {
          hasNextPage
          endCursor
        }
      }
    }
  }
`);

export const RunHeaderFragment = graphql(`
  fragment ViewerRunHeader on Run {
    id
    uuid
    status
    terminationReason
    configuration
    owner
    rounds
    promptTokens
    completionTokens
    totalTokens
    estimatedCost
    createdAt
    finishedAt
    toolOutcomeCounts {
      ok
      failed
      cancelled
      total
      failureRate
    }
  }
`);

export const TimelineAfterQuery = graphql(`
  query ViewerTimelineAfter($uuid: String!, $locale: Locale!, $after: String) {
    run(uuid: $uuid) {
      id
      timelinePage(first: 500, after: $after, locale: $locale) {
        edges {
          node {
            ...ViewerTimelineRow
          }
        }
        pageInfo {
          hasNextPage
          endCursor
        }
      }
    }
  }
`);

/** The run's header alone: read again after the live stream was lost, before it is taken up again. */
export const RunHeaderQuery = graphql(`
  query ViewerRunHeaderNow($uuid: String!) {
    run(uuid: $uuid) {
      ...ViewerRunHeader
    }
  }
`);

/** One step in full: its metadata, its stated causes, and its payload when the key may read payloads. */
export const StepDetailQuery = graphql(`
  query ViewerStepDetail($id: ID!, $payloads: Boolean!) {
    node(id: $id) {
      ... on RunStep {
        id
        toolName
        server
        failureCode
        cancelCode
        metadata
        payload @include(if: $payloads)
      }
    }
  }
`);

export const RunEventsSubscription = graphql(`
  subscription ViewerRunEvents($uuid: String!, $afterSequence: Int, $payloads: Boolean! = false) {
    runEvents(uuid: $uuid, afterSequence: $afterSequence) {
      run {
        ...ViewerRunHeader
      }
      step {
        id
        sequence
      }
      progress {
        callId
        toolName
        server
        progress
        total
        message @include(if: $payloads)
      }
    }
  }
`);

export const CancelRunMutation = graphql(`
  mutation ViewerCancelRun($uuid: String!) {
    cancelRun(input: { uuid: $uuid }) {
      __typename
      ... on CancelRunSuccess {
        data {
          ...ViewerRunHeader
        }
      }
      ... on Error {
        code
        message
      }
    }
  }
`);

export const OutcomeBucketFragment = graphql(`
  fragment ViewerOutcomeBucket on ToolOutcomeGroup {
    bucketStart
    counts {
      ok
      failed
      cancelled
    }
  }
`);

export const OutcomeRowFragment = graphql(`
  fragment ViewerOutcomeRow on ToolOutcomeGroup {
    counts {
      ok
      failed
      cancelled
      total
      failureRate
    }
    p95DurationMs
  }
`);

export const ServersPageQuery = graphql(`
  query ViewerServersPage($since: DateTime!, $minCalls: Int!, $utcOffsetMinutes: Int!) {
    perServer: toolOutcomeStats(
      groupBy: [SERVER]
      filter: { occurredAfter: $since }
      orderBy: { field: TOTAL }
      first: 500
    ) {
      groups {
        server
        ...ViewerOutcomeRow
      }
      truncated
    }
    failMost: toolOutcomeStats(
      groupBy: [SERVER]
      filter: { occurredAfter: $since }
      orderBy: { field: FAILURE_RATE }
      minCalls: $minCalls
      first: 5
    ) {
      groups {
        server
        counts {
          failed
          total
          failureRate
        }
      }
    }
    series: toolOutcomeStats(
      groupBy: []
      bucket: DAY
      filter: { occurredAfter: $since }
      first: 500
      utcOffsetMinutes: $utcOffsetMinutes
    ) {
      groups {
        ...ViewerOutcomeBucket
      }
    }
  }
`);

export const ServerToolsQuery = graphql(`
  query ViewerServerTools($server: String!, $since: DateTime!, $utcOffsetMinutes: Int!) {
    perTool: toolOutcomeStats(
      groupBy: [TOOL]
      filter: { occurredAfter: $since, servers: [$server] }
      orderBy: { field: TOTAL }
      first: 500
    ) {
      groups {
        toolName
        ...ViewerOutcomeRow
      }
      truncated
    }
    series: toolOutcomeStats(
      groupBy: []
      bucket: DAY
      filter: { occurredAfter: $since, servers: [$server] }
      first: 500
      utcOffsetMinutes: $utcOffsetMinutes
    ) {
      groups {
        ...ViewerOutcomeBucket
      }
    }
  }
`);

export const RunStatsQuery = graphql(`
  query ViewerRunStats($since: DateTime!, $utcOffsetMinutes: Int!) {
    byStatus: runStats(
      groupBy: [STATUS]
      bucket: DAY
      filter: { createdAfter: $since }
      first: 500
      utcOffsetMinutes: $utcOffsetMinutes
    ) {
      groups {
        bucketStart
        status
        runs
      }
      truncated
    }
    byReason: runStats(
      groupBy: [TERMINATION_REASON]
      bucket: DAY
      filter: { createdAfter: $since, statuses: [COMPLETED, FAILED, CANCELLED] }
      first: 500
      utcOffsetMinutes: $utcOffsetMinutes
    ) {
      groups {
        bucketStart
        terminationReason
        runs
      }
      truncated
    }
  }
`);

export const InboxQuery = graphql(`
  query ViewerInbox {
    openRequests(first: 100) {
      uuid
      kind
      source
      requestedBy
      requestedAt
      expiresAt
      toolName
      server
      arguments
      reason
      prompt
      schema
      run {
        uuid
        configuration
        owner
      }
    }
  }
`);

export const DecideApprovalMutation = graphql(`
  mutation ViewerDecideApproval($input: DecideApprovalInput!) {
    decideApproval(input: $input) {
      __typename
      ... on RequestRecordedSuccess {
        data {
          request {
            uuid
            state
          }
        }
      }
      ... on Error {
        code
        message
      }
    }
  }
`);

export const ProvideInputMutation = graphql(`
  mutation ViewerProvideInput($input: ProvideInputInput!) {
    provideInput(input: $input) {
      __typename
      ... on RequestRecordedSuccess {
        data {
          request {
            uuid
            state
          }
        }
      }
      ... on Error {
        code
        message
      }
    }
  }
`);

export const ApiKeysQuery = graphql(`
  query ViewerApiKeys {
    apiKeys {
      id
      prefix
      actor
      permissions
      createdAt
      revokedAt
    }
  }
`);

export const CreateApiKeyMutation = graphql(`
  mutation ViewerCreateApiKey($input: CreateApiKeyInput!) {
    createApiKey(input: $input) {
      __typename
      ... on CreateApiKeySuccess {
        data {
          key
          apiKey {
            id
            actor
          }
        }
      }
      ... on Error {
        code
        message
      }
    }
  }
`);

export const RevokeApiKeyMutation = graphql(`
  mutation ViewerRevokeApiKey($id: ID!) {
    revokeApiKey(id: $id) {
      __typename
      ... on RevokeApiKeySuccess {
        data {
          id
          revokedAt
        }
      }
      ... on Error {
        code
        message
      }
    }
  }
`);
