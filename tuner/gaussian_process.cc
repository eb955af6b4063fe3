#include "tuner/gaussian_process.h"

#include <cmath>
#include <limits>

namespace slapo::tuner {

double normal_pdf(double z) { return std::exp(-0.5 * z * z) / std::sqrt(2 * M_PI); }
double normal_cdf(double z) { return 0.5 * std::erfc(-z / std::sqrt(2.0)); }

Eigen::MatrixXd GaussianProcess::kernel(const Eigen::MatrixXd& a, const Eigen::MatrixXd& b,
                                        double length) const {
  // Squared distances through the Gram matrix: |a|² + |b|² − 2ab.
  const Eigen::VectorXd an = a.rowwise().squaredNorm(), bn = b.rowwise().squaredNorm();
  Eigen::MatrixXd d2 = (-2.0 * a * b.transpose()).colwise() + an;
  d2.rowwise() += bn.transpose();
  const double s5 = std::sqrt(5.0) / length;
  return d2.unaryExpr([&](double v) {
    const double r = std::sqrt(std::max(v, 0.0)) * s5;  // √5·r/ℓ
    return (1 + r + r * r / 3) * std::exp(-r);
  });
}

double GaussianProcess::factor(double length, double noise) {
  Eigen::MatrixXd k = kernel(x_, x_, length);
  k.diagonal().array() += noise;
  llt_.compute(k);
  if (llt_.info() != Eigen::Success) return -std::numeric_limits<double>::infinity();
  alpha_ = llt_.solve(z_);
  const Eigen::MatrixXd& l = llt_.matrixLLT();
  double log_det = 0;
  for (long i = 0; i < l.rows(); ++i) log_det += std::log(l(i, i));
  return -0.5 * z_.dot(alpha_) - log_det -
         0.5 * static_cast<double>(z_.size()) * std::log(2 * M_PI);
}

void GaussianProcess::fit(const Eigen::MatrixXd& x, const Eigen::VectorXd& y, bool reuse_hyper) {
  x_ = x;
  n_ = x.rows();
  y_mean_ = y.mean();
  const double var =
      n_ > 1 ? (y.array() - y_mean_).square().sum() / static_cast<double>(n_ - 1) : 0.0;
  y_scale_ = var > 1e-24 ? std::sqrt(var) : 1.0;
  z_ = (y.array() - y_mean_) / y_scale_;
  if (!reuse_hyper) {
    double best = -std::numeric_limits<double>::infinity();
    double best_length = length_, best_noise = noise_;
    for (double length : {0.1, 0.2, 0.4, 0.8, 1.6}) {
      for (double noise : {1e-3, 3e-2}) {
        const double ll = factor(length, noise);
        if (ll > best) best = ll, best_length = length, best_noise = noise;
      }
    }
    length_ = best_length;
    noise_ = best_noise;
  }
  // A factorization that failed (duplicate points, tiny noise) gets more jitter until it works.
  for (double noise = noise_; !std::isfinite(factor(length_, noise)) && noise < 1e3; noise *= 10)
    noise_ = noise * 10;
}

void GaussianProcess::predict(const Eigen::MatrixXd& x, Eigen::VectorXd* mean,
                              Eigen::VectorXd* variance) const {
  const Eigen::MatrixXd ks = kernel(x, x_, length_);  // m × n
  *mean = (ks * alpha_).array() * y_scale_ + y_mean_;
  const Eigen::MatrixXd v = llt_.matrixL().solve(ks.transpose());  // n × m
  *variance = ((1.0 - v.colwise().squaredNorm().array()).max(1e-12) * y_scale_ * y_scale_).matrix();
}

}  // namespace slapo::tuner
