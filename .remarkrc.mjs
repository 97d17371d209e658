// `npm run docs:links`: every relative link and heading anchor in the Markdown resolves (offline).
export default {
  plugins: [['remark-validate-links', { repository: false }]],
};
